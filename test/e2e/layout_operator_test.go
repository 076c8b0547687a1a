//go:build e2e

package e2e

// The Flux Operator layout (testdata/layouts/operator, ours) against the
// sandbox, which runs no Flux Operator: the repository renders no root; the
// flux-instance values declare spec.sync and the controllers' customization.
// `up` renders the controllers with those patches and proves them live,
// then creates the source and the root Kustomization as the operator
// would; `converge` walks the graph,
// `status` finds it healthy — and with a FluxInstance in the namespace,
// sync leaves them to the operator.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/patches"
)

// operatorLayoutEdits makes the layout reconcile in the sandbox: the
// declared source is the suite's Git server, and the charts and the
// ExternalSecret (no operator for either here) are plain objects with the
// same names and keys.
func operatorLayoutEdits(url string) map[string]string {
	cm := func(name, data string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n%s", name, data)
	}
	return map[string]string{
		"bootstrap/helmfile.d/values-flux-instance.yaml": "instance:\n  sync:\n    kind: GitRepository\n    url: " + url + "\n    ref: refs/heads/main\n    path: kubernetes/flux/cluster\n" +
			"  kustomize:\n    patches:\n      - patch: |\n          - op: add\n            path: /spec/template/spec/containers/0/args/-\n            value: --requeue-dependency=5s\n        target:\n          kind: Deployment\n          name: kustomize-controller\n",
		"kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml":   cm("flux-instance", "  layout: operator\n"),
		"kubernetes/apps/flux-system/flux-instance/app/ocirepository.yaml": cm("flux-instance-chart", "  layout: operator\n"),
		"kubernetes/apps/default/echo/app/helmrelease.yaml":                cm("echo", "  HOST: echo.${SECRET_DOMAIN}\n  REALM: ${ECHO_REALM}\n  TOKEN: ${ECHO_TOKEN}\n"),
		"kubernetes/apps/default/echo/app/ocirepository.yaml":              cm("echo-chart", "  layout: operator\n"),
		"kubernetes/apps/default/echo-config/app/externalsecret.yaml":      "apiVersion: v1\nkind: Secret\nmetadata:\n  name: echo-env\nstringData:\n  ECHO_TOKEN: token\n  ECHO_REALM: realm\n",
	}
}

func TestFluxInstanceRoot(t *testing.T) {
	ctx := timeoutCtx(t, 10*time.Minute)
	ensureFlux(t)
	name := freshRepoName("layout-operator")
	url := suite.git.URL + "/" + name + ".git"
	repoDir := copyDir(t, filepath.Join(suite.root, "testdata", "layouts", "operator"), operatorLayoutEdits(url))
	gitRepo, sha, err := suite.git.CreateRepo(ctx, name, repoDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = gitRepo.Close() })
	rev := gitRepo.Revision(sha)
	env := []string{"--repo", repoDir, "--path", "kubernetes/flux/cluster"}

	// The prerequisite made out of band at bootstrap, in both namespaces
	// that substitute from it: the sync's gate refuses before it exists,
	// and with a key the apps use missing, naming it; nothing is applied.
	prereq := rootsync.GatePrerequisite.Each("Secret/default/cluster-secrets").ID
	needed := rootsync.GateSupplyNeeded.Each("Secret/default/cluster-secrets").ID
	if r := bootstrapJSON(t, append([]string{"sync", "--timeout", "5s"}, env...)...); r.code != 1 || r.report.Changed ||
		!strings.Contains(r.report.check(needed), "not in the cluster") || !strings.Contains(r.report.check(needed), "--supply FILE") {
		t.Errorf("sync before the prerequisite exists: want exit 1, nothing changed, %s failing\n%s", needed, r)
	}
	// putPrereq server-side applies cluster-secrets with data in both
	// namespaces; the Secrets go when the test ends.
	putPrereq := func(data map[string]string) {
		for _, ns := range []string{fluxNS, "default"} {
			s := &corev1.Secret{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster-secrets"}, StringData: data}
			if err := suite.client.Patch(ctx, s, client.Apply, client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = suite.client.Delete(timeoutCtx(t, 30*time.Second), s) })
		}
	}
	putPrereq(map[string]string{"OTHER": "x"})
	if r := bootstrapJSON(t, append([]string{"sync", "--timeout", "5s"}, env...)...); r.code != 1 || r.report.Changed ||
		!strings.Contains(r.report.check(prereq), "lacks key(s) SECRET_DOMAIN") {
		t.Errorf("sync with the prerequisite lacking SECRET_DOMAIN: want exit 1, nothing changed, %s naming the key\n%s", prereq, r)
	}
	putPrereq(map[string]string{"SECRET_DOMAIN": "example.test"})

	newInstance := fluxInstanceKind(ctx, t)

	t.Run("LeftToTheOperatorWhereItIs", func(t *testing.T) {
		fi := newInstance()
		// The operator makes the root here: sync applies nothing and waits
		// for what it made (no operator runs in the sandbox, so nothing
		// comes: exit 1 at the source, after a short wait).
		r := bootstrapJSON(t, append([]string{"sync", "--timeout", "5s"}, env...)...)
		if r.code != 1 || r.report.Changed || !strings.Contains(r.report.check(rootsync.GateOperator.ID), "pass: the Flux Operator manages this cluster (FluxInstance flux-system/flux)") ||
			!strings.Contains(r.report.check(rootsync.GateApplied.ID), "pass: nothing applied") || !strings.HasPrefix(r.report.check(rootsync.GateSourceReady.ID), "fail") {
			t.Errorf("sync with a FluxInstance in flux-system: want nothing applied, then the operator's source waited for\n%s", r)
		}
		// A temporary source the operator would undo is refused.
		if r := bootstrapJSON(t, append([]string{"sync", "--timeout", "5s", "--source-url", url}, env...)...); r.code != 1 || r.report.Changed ||
			!strings.Contains(r.report.check(rootsync.GateOperator.ID), "would undo a temporary source") {
			t.Errorf("sync --source-url with a FluxInstance in flux-system: want a refusal\n%s", r)
		}
		var src sourcev1.GitRepository
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxNS}, &src); err == nil {
			t.Errorf("sync refused but GitRepository %s/%s exists", fluxNS, fluxNS)
		}
		if err := suite.client.Delete(ctx, fi); err != nil {
			t.Fatal(err)
		}
	})

	// up: the controllers with the instance's spec.kustomize.patches,
	// proven live; then the declared root, created as the operator would.
	up := bootstrapJSON(t, append([]string{"up", "--flux-version", "v2.9.5", "--timeout", "4m"}, env...)...)
	if up.code != 0 {
		t.Fatalf("up of the FluxInstance-declared root: want exit 0\n%s", up)
	}
	const values = "bootstrap/helmfile.d/values-flux-instance.yaml"
	if c := up.report.check(patches.GatePatchLanded.ID + "/1"); !strings.HasPrefix(c, "pass") || !strings.Contains(c, values+":9 instance.kustomize patches[0]") {
		t.Errorf("the instance's patch is not proven naming its file and field: %s", c)
	}
	for _, id := range []string{controllers.GateFlagsLive.ID, rootsync.GateOperator.ID, rootsync.GateSource.ID, rootsync.GateRootApplied.ID} {
		if c := up.report.check(id); !strings.HasPrefix(c, "pass") {
			t.Errorf("up: %s: %s", id, c)
		}
	}
	var kc appsv1.Deployment
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "kustomize-controller"}, &kc); err != nil || !slices.Contains(kc.Spec.Template.Spec.Containers[0].Args, "--requeue-dependency=5s") {
		t.Errorf("live kustomize-controller (%v) lacks the instance's --requeue-dependency=5s", err)
	}
	// What the operator would have made, from spec.sync.
	var src sourcev1.GitRepository
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxNS}, &src); err != nil {
		t.Fatal(err)
	}
	if src.Spec.URL != url || src.Spec.Reference == nil || src.Spec.Reference.Name != "refs/heads/main" || src.Spec.Interval.Duration != time.Minute {
		t.Errorf("GitRepository spec %+v, want url %s, ref.name refs/heads/main, interval 1m", src.Spec, url)
	}
	if r := convergeCLI(t, append(env, "--timeout", "3m")...); r.code != 0 {
		t.Errorf("converge: want exit 0\n%s", r)
	} else {
		for _, n := range []string{"flux-system", "cluster-apps"} {
			if c := r.report.check(nodeGate(n)); !strings.HasPrefix(c, "pass") || !strings.Contains(c, rev) {
				t.Errorf("converge: %s: %s, want pass at %s", n, c, rev)
			}
		}
	}
	statusHealthy(t, "status of the FluxInstance-declared root", env...)
	// On a cluster the operator manages (its FluxInstance, its labels on
	// the controllers; the root and source it would have made are the ones
	// up made above), up leaves the controllers alone and runs the rest.
	t.Run("UpLeavesTheControllersToTheOperator", func(t *testing.T) {
		fi := newInstance()
		t.Cleanup(func() { _ = suite.client.Delete(timeoutCtx(t, 30*time.Second), fi) })
		var ds appsv1.DeploymentList
		if err := suite.client.List(ctx, &ds, client.InNamespace(fluxNS)); err != nil {
			t.Fatal(err)
		}
		for i := range ds.Items {
			d := &ds.Items[i]
			patch := []byte(`{"metadata":{"labels":{"fluxcd.controlplane.io/name":"flux","fluxcd.controlplane.io/namespace":"flux-system"}}}`)
			if err := suite.client.Patch(ctx, d, client.RawPatch(types.MergePatchType, patch)); err != nil {
				t.Fatal(err)
			}
		}
		before := kc.Spec.Template.Spec.Containers[0].Args
		r := bootstrapJSON(t, append([]string{"up", "--flux-version", "v2.9.5", "--timeout", "2m"}, env...)...)
		if r.code != 0 || !strings.Contains(r.report.check(controllers.GateOwnership.ID), "warn: the Flux Operator manages these controllers (FluxInstance flux-system/flux)") ||
			!strings.Contains(r.report.check(rootsync.GateApplied.ID), "pass: nothing applied") || !strings.HasPrefix(r.report.check(nodeGate("cluster-apps")), "pass") {
			t.Errorf("up on an operator-managed cluster: want exit 0, the controllers left alone, the sync proven\n%s", r)
		}
		if c := r.report.check(controllers.GateFlagsLive.ID); c != "missing" {
			t.Errorf("%s ran on controllers up left alone: %s", controllers.GateFlagsLive.ID, c)
		}
		// status: the controllers are the operator's, not compared with
		// this tool's render; the rest of the cluster is judged as ever.
		if st := statusCLI(t, env...); st.code != 0 || !strings.HasPrefix(st.report.check(controllers.GateDrift.ID), "warn: the Flux Operator manages the controllers (FluxInstance flux-system/flux)") {
			t.Errorf("status on an operator-managed cluster: want exit 0 with the drift not judged\n%s", st)
		}
		var after appsv1.Deployment
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "kustomize-controller"}, &after); err != nil || !slices.Equal(after.Spec.Template.Spec.Containers[0].Args, before) {
			t.Errorf("kustomize-controller changed under the operator (%v): %q, was %q", err, after.Spec.Template.Spec.Containers[0].Args, before)
		}
	})

	// The substitution reached the app: the prerequisite's and the
	// ExternalSecret-made Secret's keys.
	var cm corev1.ConfigMap
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "echo"}, &cm); err != nil || cm.Data["HOST"] != "echo.example.test" || cm.Data["TOKEN"] != "token" {
		t.Errorf("default/echo: %v, data %v", err, cm.Data)
	}
}

// fluxInstanceKind installs enough of the Flux Operator's CRD for a
// FluxInstance to exist (the operator itself does not run here), removed
// when the test ends, and returns a function creating FluxInstance
// flux-system/flux.
func fluxInstanceKind(ctx context.Context, t *testing.T) func() *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(fluxInstanceCRD())
	if err != nil {
		t.Fatal(err)
	}
	crd := &unstructured.Unstructured{Object: m}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := suite.client.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(timeoutCtx(t, 30*time.Second), crd) })
	return func() *unstructured.Unstructured {
		fi := &unstructured.Unstructured{}
		fi.SetAPIVersion("fluxcd.controlplane.io/v1")
		fi.SetKind("FluxInstance")
		fi.SetNamespace(fluxNS)
		fi.SetName("flux")
		// The CRD is established within a moment; create retries until then.
		deadline := time.Now().Add(time.Minute)
		err := suite.client.Create(ctx, fi)
		for ; err != nil && time.Now().Before(deadline); err = suite.client.Create(ctx, fi) {
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("create FluxInstance: %v", err)
		}
		return fi
	}
}

// fluxInstanceCRD is enough of the Flux Operator's CRD for a FluxInstance
// to exist (the operator itself does not run here).
func fluxInstanceCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "fluxinstances.fluxcd.controlplane.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "fluxcd.controlplane.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "fluxinstances", Singular: "fluxinstance", Kind: "FluxInstance", ListKind: "FluxInstanceList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &preserve}}}},
		},
	}
}
