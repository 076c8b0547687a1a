package rootsync

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const operatorLayout = "../../testdata/layouts/operator"

// TestBuildDeclaredRoot: the Flux Operator layout renders no root; its
// flux-instance HelmRelease values declare spec.sync. Build adds the source and the
// root Kustomization as the operator creates them (flux-operator
// internal/builder/templates.go syncTmpl: GitRepository ref.name from
// ref, interval 1m; Kustomization interval 10m, prune: true), located at
// the declaration, and the static gates pass on them.
func TestBuildDeclaredRoot(t *testing.T) {
	r, err := Build(Options{Repo: operatorLayout, Path: "kubernetes/flux/cluster", Namespace: "flux-system", RootName: "flux-system"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Declared == nil || r.Source == nil || r.Root == nil {
		t.Fatalf("declared %v, source %v, root %v", r.Declared, r.Source, r.Root)
	}
	if len(r.Objects) < 3 || r.Objects[0] != r.Source || r.Objects[1].GetKind() != "Kustomization" || r.Objects[1].GetName() != "flux-system" {
		t.Fatalf("objects do not begin with the declared source and root: %v", names(r.Objects))
	}
	for _, f := range []struct {
		path []string
		want string
	}{
		{[]string{"spec", "url"}, "https://git.example.invalid/homelab/operator-layout.git"},
		{[]string{"spec", "ref", "name"}, "refs/heads/main"},
		{[]string{"spec", "interval"}, "1m0s"},
	} {
		if got, _, _ := unstructured.NestedString(r.Source.Object, f.path...); got != f.want {
			t.Errorf("source %s = %q, want %q", strings.Join(f.path, "."), got, f.want)
		}
	}
	if r.Root.Spec.Path != "kubernetes/flux/cluster" || !r.Root.Spec.Prune || r.Root.Spec.Interval.Duration.String() != "10m0s" {
		t.Errorf("root spec %+v", r.Root.Spec)
	}
	for _, c := range Static(r) {
		if c.Verdict != verify.Pass {
			t.Errorf("%s: %s %s", c.ID, c.Verdict, c.Message)
		}
		if c.ID == GateSource.ID && !strings.Contains(strings.Join(c.Evidence, " "), "kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml") {
			t.Errorf("%s does not name the declaration: %v", c.ID, c.Evidence)
		}
	}
}

// TestOperatorGate: sync creates a declared root only where no Flux
// Operator does (no FluxInstance kind at all, or none in the root's
// namespace); with a FluxInstance there it applies nothing and proves what
// the operator made, and refuses a temporary source the operator would
// undo.
func TestOperatorGate(t *testing.T) {
	r, err := Build(Options{Repo: operatorLayout, Path: "kubernetes/flux/cluster", Namespace: "flux-system", RootName: "flux-system"})
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	instance := func(ns string) client.Object {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: "fluxcd.controlplane.io", Version: "v1", Kind: "FluxInstance"})
		u.SetNamespace(ns)
		u.SetName("flux")
		return u
	}
	for _, tc := range []struct {
		name      string
		objs      []client.Object
		temporary bool
		verdict   verify.Verdict
		instance  string
		want      string
	}{
		{"no FluxInstance", nil, false, verify.Pass, "", "sync creates the root and its source"},
		{"one elsewhere", []client.Object{instance("other")}, false, verify.Pass, "", "no FluxInstance in flux-system"},
		{"one in the root's namespace", []client.Object{instance("flux-system")}, false, verify.Pass, "flux-system/flux", "sync applies nothing and proves them"},
		{"one, and a temporary source", []client.Object{instance("flux-system")}, true, verify.Fail, "", "would undo a temporary source"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			c, inst := operatorGate(context.Background(), cl, r, tc.temporary)
			if c.Verdict != tc.verdict || inst != tc.instance || !strings.Contains(c.Message, tc.want) {
				t.Errorf("%s %s (instance %q), want %s containing %q (instance %q)", c.Verdict, c.Message, inst, tc.verdict, tc.want, tc.instance)
			}
		})
	}
}

func names(objs []*unstructured.Unstructured) []string {
	var out []string
	for _, u := range objs {
		out = append(out, u.GetKind()+"/"+u.GetName())
	}
	return out
}

// TestGateExternalArtifact: kustomize-controller refuses a Kustomization
// whose source is an ExternalArtifact unless its ExternalArtifact gate is
// on (v1.9.5 getSource), and the gate is opt-in: the live Deployment's args
// and version decide.
func TestGateExternalArtifact(t *testing.T) {
	apps, err := os.ReadFile(filepath.Join(fixture, "clusters/base/apps.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const from = "  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
	if !strings.Contains(string(apps), from) {
		t.Fatalf("the fixture changed: no %q in clusters/base/apps.yaml", from)
	}
	repo := copyFixture(t, map[string]string{"clusters/base/apps.yaml": strings.Replace(string(apps), from, "  sourceRef:\n    kind: ExternalArtifact\n    name: apps\n", 1)})
	r, err := Build(opts(repo, "dev"))
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := kube.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	deploy := func(image string, args ...string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "kustomize-controller"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: image, Args: args}}}}}}
	}
	const image = "ghcr.io/fluxcd/kustomize-controller:v1.9.5"
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		verdict verify.Verdict
		want    string
	}{
		{"the default (opt-in)", []client.Object{deploy(image, "--log-level=info")}, verify.Fail, "runs with ExternalArtifact=false (its default)"},
		{"turned off", []client.Object{deploy(image, "--feature-gates=ExternalArtifact=false")}, verify.Fail, "ExternalArtifact=false (set so)"},
		{"turned on", []client.Object{deploy(image, "--feature-gates=StrictPostBuildSubstitutions=true", "--feature-gates=ExternalArtifact=true")}, verify.Pass, "runs with ExternalArtifact=true"},
		// kustomize-controller v1.6.0 has no such gate (internal/features
		// at v1.6.0, gatedefaults.txt): setting it would stop the controller.
		{"a version without the gate", []client.Object{deploy("ghcr.io/fluxcd/kustomize-controller:v1.6.0", "--feature-gates=ExternalArtifact=true")}, verify.Fail, "kustomize-controller v1.6.0 has no ExternalArtifact feature gate"},
		{"no Deployment", nil, verify.Skip, "could not be read"},
		{"an untagged image", []client.Object{deploy("ghcr.io/fluxcd/kustomize-controller@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")}, verify.Skip, "its ExternalArtifact default is too"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()
			c := ExternalArtifactGate(context.Background(), cl, r)
			if c.Verdict != tc.verdict || !strings.Contains(c.Message, tc.want) || (tc.verdict != verify.Skip && !strings.Contains(c.Message, "flux-system/apps")) {
				t.Errorf("%s %s, want %s containing %q", c.Verdict, c.Message, tc.verdict, tc.want)
			}
		})
	}
	// Without an ExternalArtifact reader the gate does not ask.
	plain, err := Build(opts(copyFixture(t, nil), "dev"))
	if err != nil {
		t.Fatal(err)
	}
	if c := ExternalArtifactGate(context.Background(), fake.NewClientBuilder().WithScheme(scheme).Build(), plain); c.Verdict != verify.Pass {
		t.Errorf("no reader: %s %s", c.Verdict, c.Message)
	}
}

// TestDeclaredRootRefusesSourceBranch: a declared source is applied by
// nothing in git after the cutover, so a temporary branch would replace
// its declared ref for good: refused before the first request.
func TestDeclaredRootRefusesSourceBranch(t *testing.T) {
	connected := false
	p := NewPhase(RunOptions{Build: Options{Repo: operatorLayout, Path: "kubernetes/flux/cluster", Namespace: "flux-system", RootName: "flux-system"},
		Source: &Temporary{URL: "https://mirror.example.invalid/fleet.git", Branch: "bring-up"}}, func() (*apply.Cluster, error) {
		connected = true
		return nil, errors.New("no cluster here")
	})
	_, err := p.Before(context.Background(), &pipeline.Run{Report: verify.NewReport("sync")})
	if !verify.IsInput(err) || !strings.Contains(err.Error(), "--source-branch bring-up") || !strings.Contains(err.Error(), "ref refs/heads/main") || connected {
		t.Errorf("err %v (connected %t), want an input error naming the flag and the declared ref, before any request", err, connected)
	}
}

// TestPlaceholderNeedsTheRealSource: flux bootstrap's placeholder
// (testdata/layouts/placeholder: gotk-sync.yaml committed with no object)
// declares a root whose URL is the bootstrapped repository's, which git
// does not hold: sync refuses it before it connects, naming the flags
// that declare the real source; with them the root is the command line's
// and sync creates the GitRepository and the Kustomization applying the
// path, as flux bootstrap writes them (flux2 pkg/manifestgen/sync.Generate).
func TestPlaceholderNeedsTheRealSource(t *testing.T) {
	o := Options{Repo: "../../testdata/layouts/placeholder", Path: "clusters/staging", Namespace: "flux-system", RootName: "flux-system"}
	p := NewPhase(RunOptions{Build: o}, func() (*apply.Cluster, error) {
		t.Fatal("sync connected to the cluster on flux bootstrap's placeholder")
		return nil, errors.New("unreachable")
	})
	checks, err := p.Before(context.Background(), &pipeline.Run{Report: verify.NewReport("sync")})
	if err != nil {
		t.Fatal(err)
	}
	c := find(t, checks, GateRoot.ID)
	if !verify.Blocks(checks...) || c.Verdict != verify.Fail || !strings.Contains(c.Message, "clusters/staging/flux-system/gotk-sync.yaml is flux bootstrap's placeholder") ||
		!strings.Contains(c.Message, "--source-kind GitRepository --source-url URL") {
		t.Fatalf("%s %s", c.Verdict, c.Message)
	}

	o.Sync = &fluxrepo.Sync{Kind: "GitRepository", URL: "https://git.example.invalid/fleet/fork.git", Ref: "refs/heads/main"}
	r, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if r.Declared == nil || r.Declared.Layout != fluxrepo.LayoutCommandLine || len(r.Objects) < 2 || r.Objects[0].GetKind() != "GitRepository" {
		t.Fatalf("declared %+v, objects %v", r.Declared, names(r.Objects))
	}
	if url, _, _ := unstructured.NestedString(r.Objects[0].Object, "spec", "url"); url != o.Sync.URL || r.Root.Spec.Path != "./clusters/staging" || !r.Root.Spec.Prune {
		t.Fatalf("source url %q, root spec %+v", url, r.Root.Spec)
	}
	for _, c := range Static(r) {
		if c.Verdict != verify.Pass {
			t.Errorf("%s: %s %s", c.ID, c.Verdict, c.Message)
		}
	}
}

// TestCommandLineOCIRoot: `--source-kind OCIRepository --source-url
// oci://… --source-ref TAG` declares an OCI root: sync builds the
// OCIRepository and the root reading it (an OCI root: IsOCIRoot), and its
// static gates pass.
func TestCommandLineOCIRoot(t *testing.T) {
	o := Options{Repo: "../../testdata/layouts/placeholder", Path: "clusters/staging", Namespace: "flux-system", RootName: "flux-system",
		Sync: &fluxrepo.Sync{Kind: "OCIRepository", URL: "oci://registry.example.invalid/fleet/staging", Ref: "v1"}}
	r, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	if !IsOCIRoot(r) || r.Declared == nil || r.Declared.Layout != fluxrepo.LayoutCommandLine {
		t.Fatalf("declared %+v, objects %v: want an OCI root declared on the command line", r.Declared, names(r.Objects))
	}
	ref, err := OCIRefOf(r.Source)
	if url, _, _ := unstructured.NestedString(r.Source.Object, "spec", "url"); err != nil || url != o.Sync.URL || ref == nil || ref.Tag != "v1" {
		t.Fatalf("source url %q ref %+v %v", url, ref, err)
	}
	for _, c := range Static(r) {
		if c.Verdict != verify.Pass {
			t.Errorf("%s: %s %s", c.ID, c.Verdict, c.Message)
		}
	}
}
