//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/sandbox/runner"
)

// These scenarios run on a sandbox of their own that never had Flux (in any
// order, alone or not): `bootstrap controllers` is refused to a restricted
// identity, installs Flux v2.4.0, turns the strict gate on with the shipped
// overlay, upgrades to v2.9.5, restarts for a new flag, survives a SIGKILL
// and prunes the extras. The sandbox is torn down with the test.

var homelabExtras = []string{"--components-extra", "image-reflector-controller,image-automation-controller"}

// controllersCLI runs `bootstrap controllers -o json` against e, as
// kubeconfig's identity when it is not "".
func (e *env) controllersCLI(t *testing.T, kubeconfig string, args ...string) (cliReport, string) {
	t.Helper()
	if kubeconfig == "" {
		kubeconfig = e.sb.KubeconfigPath
	}
	full := append([]string{"controllers", "-o", "json", "--kubeconfig", kubeconfig, "--timeout", "2m"}, args...)
	_, _, stderr, r := runJSON(t, exec.Command(bootstrapCLI(t), full...))
	return r, stderr
}

func mustPass(t *testing.T, r cliReport, stderr string) {
	t.Helper()
	if r.ExitCode != 0 {
		t.Fatalf("exit %d (%s): %+v\n%s", r.ExitCode, r.Error, r.Checks, stderr)
	}
}

func TestControllers(t *testing.T) {
	e, err := startEnv(context.Background(), suite.envConfig, "controllers", t.TempDir(), envOptions{runner: true, git: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.teardown()
		if left := e.survivors(); len(left) > 0 {
			t.Errorf("processes left behind by the controllers sandbox: %s", strings.Join(left, ", "))
		}
	})
	steps := []struct {
		name string
		fn   func(*testing.T, *env)
	}{
		{"RestrictedUserStoppedBeforeAnything", testControllersRestrictedUser},
		{"FreshV240PlainIsFailOpen", testControllersV240Plain},
		{"ShippedOverlayMakesV240Strict", testControllersV240Strict},
		{"RerunChangesNothing", testControllersRerun},
		{"UpgradeToV295RunsStrict", testControllersUpgrade},
		{"NewFlagRestartsTheController", testControllersNewFlag},
		{"KilledMidApplyRerunConverges", testControllersKilled},
		{"RemovedExtrasArePruned", testControllersPrune},
	}
	for _, s := range steps {
		if !t.Run(s.name, func(t *testing.T) { s.fn(t, e) }) {
			t.Fatalf("%s failed; later scenarios depend on it and were not run", s.name)
		}
	}
}

func ctlKustomization() *kustomizev1.Kustomization {
	k := kustomization("ctl-strict", "./strict")
	k.Spec.SourceRef.Name = "ctl-fleet"
	k.Spec.TargetNamespace = ""
	k.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"SANDBOX_DEFINED": "yes"}}
	return k
}

// deploymentGen is the generation of e's flux-system Deployment name.
func (e *env) deploymentGen(ctx context.Context, t *testing.T, name string) int64 {
	t.Helper()
	var d appsv1.Deployment
	if err := e.client.Get(ctx, clientKey(fluxNS, name), &d); err != nil {
		t.Fatal(err)
	}
	return d.Generation
}

// testControllersRestrictedUser: an identity that may do everything but
// create CRDs is stopped by the before-gate, which lists the gap, and
// nothing is applied.
func testControllersRestrictedUser(t *testing.T, e *env) {
	ctx := timeoutCtx(t, time.Minute)
	kc := e.restrictedKubeconfig(ctx, t)
	r, stderr := e.controllersCLI(t, kc, "--flux-version", "v2.4.0")
	if r.ExitCode != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.ExitCode, stderr)
	}
	if got := r.check("cluster.permissions"); !strings.HasPrefix(got, "fail") {
		t.Fatalf("permissions gate: %s", got)
	}
	raw, _ := json.Marshal(r)
	if !strings.Contains(string(raw), "create customresourcedefinitions.apiextensions.k8s.io cluster-wide") {
		t.Fatalf("the report does not list the missing permission: %s", raw)
	}
	if len(r.Objects) != 0 {
		t.Fatalf("a failed before-gate must not plan or apply: %+v", r.Objects)
	}
	var ns metav1.PartialObjectMetadata
	ns.SetGroupVersionKind(schemaNamespace)
	if err := e.client.Get(ctx, clientKey("", fluxNS), &ns); err == nil {
		t.Fatal("namespace flux-system exists: something was applied")
	}
}

// testControllersV240Plain installs the version the live cluster ran, without
// the overlay. The extras' Deployments are Available through kwok although
// nothing runs them. The sandbox's v1.9.5 binaries cannot serve a Flux v2.4.0
// install (they need source.toolkit.fluxcd.io/v1 OCIRepository, which the
// v2.4.0 CRDs do not serve, and older controller modules are not on the Go
// module proxy), so the runner must say so rather than pretend.
func testControllersV240Plain(t *testing.T, e *env) {
	ctx := timeoutCtx(t, 4*time.Minute)
	r, stderr := e.controllersCLI(t, "", append([]string{"--flux-version", "v2.4.0", "--plain"}, homelabExtras...)...)
	mustPass(t, r, stderr)
	if !r.Changed || len(r.Warnings) == 0 || !strings.HasPrefix(r.check("overlay.plain"), "warn") {
		t.Fatalf("fresh --plain install: changed=%t warnings=%v plain=%s", r.Changed, r.Warnings, r.check("overlay.plain"))
	}
	if got := r.check("controllers.strict-substitution"); !strings.HasPrefix(got, "warn") {
		t.Fatalf("v2.4.0 --plain must warn that strict substitution is off: %s", got)
	}
	for _, id := range []string{"controllers.flags-live", "controllers.rollout"} {
		if got := r.check(id); !strings.HasPrefix(got, "pass") {
			t.Fatalf("%s: %s", id, got)
		}
	}
	for _, d := range []string{"image-reflector-controller", "image-automation-controller", "kustomize-controller"} {
		if dep := e.deployment(ctx, t, d); dep.Status.AvailableReplicas < 1 {
			t.Fatalf("%s not available", d)
		}
	}
	// The runner reports what it cannot run, with the reason (source-controller
	// exits at once; kustomize-controller only when its cache sync times out).
	cannot := func(st runner.Status) (string, bool) {
		for _, name := range runner.Runnable {
			if le := st.Instances[name].LastExit; strings.Contains(le, "OCIRepository") {
				return name, true
			}
		}
		return "", false
	}
	if err := e.runner.WaitFor(ctx, func(st runner.Status) bool { _, ok := cannot(st); return ok }); err != nil {
		t.Fatalf("the runner did not report why v1.9.5 cannot run a v2.4.0 install: %+v", e.runner.Status().Instances)
	}
	name, _ := cannot(e.runner.Status())
	in := e.runner.Status().Instances["kustomize-controller"]
	if g := runner.EffectiveGates(in.Args)[runner.StrictGate]; g != "false" {
		t.Fatalf("v1.4.0 without the overlay must be started fail-open, runner args %q", in.Args)
	}
	t.Logf("runner on Flux v2.4.0: kustomize-controller notes %v; %s: %s", in.Notes, name, firstLine(e.runner.Status().Instances[name].LastExit))
}

func testControllersV240Strict(t *testing.T, e *env) {
	ctx := timeoutCtx(t, 4*time.Minute)
	gen := e.deploymentGen(ctx, t, "kustomize-controller")
	dry, stderr := e.controllersCLI(t, "", append([]string{"--flux-version", "v2.4.0", "--dry-run"}, homelabExtras...)...)
	mustPass(t, dry, stderr)
	if !dry.DryRun || !dry.Changed || !slices.Equal(restartsAll(dry), []string{"Deployment/flux-system/kustomize-controller"}) {
		t.Fatalf("dry run must predict exactly the kustomize-controller restart: changed=%t restarts=%v", dry.Changed, restartsAll(dry))
	}
	if e.deploymentGen(ctx, t, "kustomize-controller") != gen {
		t.Fatal("--dry-run changed the Deployment")
	}
	r, stderr := e.controllersCLI(t, "", append([]string{"--flux-version", "v2.4.0"}, homelabExtras...)...)
	mustPass(t, r, stderr)
	if !strings.Contains(r.check("controllers.strict-substitution"), "only because of the overlay") {
		t.Fatalf("strict gate: %s", r.check("controllers.strict-substitution"))
	}
	if !strings.HasPrefix(r.check("controllers.flags-live"), "pass") {
		t.Fatalf("flags-live: %s", r.check("controllers.flags-live"))
	}
	if e.deploymentGen(ctx, t, "kustomize-controller") == gen {
		t.Fatal("the overlay did not change the kustomize-controller Deployment")
	}
	// The runner follows the template: the next start carries the gate.
	if err := e.runner.WaitFor(ctx, func(st runner.Status) bool {
		return runner.EffectiveGates(st.Instances["kustomize-controller"].Args)[runner.StrictGate] == "true"
	}); err != nil {
		t.Fatalf("the runner did not pick up the gate: %v", err)
	}
}

func testControllersRerun(t *testing.T, e *env) {
	ctx := timeoutCtx(t, 2*time.Minute)
	gen := e.deploymentGen(ctx, t, "kustomize-controller")
	hash := e.runner.Status().Instances["kustomize-controller"].TemplateHash
	r, stderr := e.controllersCLI(t, "", append([]string{"--flux-version", "v2.4.0"}, homelabExtras...)...)
	mustPass(t, r, stderr)
	if r.Changed || len(restartsAll(r)) > 0 {
		t.Fatalf("identical re-run: changed=%t restarts=%v", r.Changed, restartsAll(r))
	}
	if e.deploymentGen(ctx, t, "kustomize-controller") != gen || e.runner.Status().Instances["kustomize-controller"].TemplateHash != hash {
		t.Fatal("identical re-run restarted kustomize-controller")
	}
}

func testControllersUpgrade(t *testing.T, e *env) {
	ctx := timeoutCtx(t, 4*time.Minute)
	// An object stored in v1beta2, a version Flux v2.9.5's OCIRepository
	// CRD no longer serves.
	oci := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1beta2", "kind": "OCIRepository",
		"metadata": map[string]any{"name": "ctl-oci", "namespace": fluxNS},
		"spec":     map[string]any{"url": "oci://127.0.0.1:1/none", "interval": "10m", "ref": map[string]any{"tag": "latest"}, "suspend": true},
	}}
	if err := e.client.Create(ctx, oci); err != nil {
		t.Fatal(err)
	}
	gen := e.deploymentGen(ctx, t, "kustomize-controller")
	r, stderr := e.controllersCLI(t, "", append([]string{"--flux-version", "v2.9.5"}, homelabExtras...)...)
	if r.ExitCode != 1 || !strings.HasPrefix(r.check("controllers.crd-stored-versions"), "fail") || len(r.Objects) != 0 {
		t.Fatalf("an upgrade dropping a stored version must stop before applying: exit %d, %s\n%s", r.ExitCode, r.check("controllers.crd-stored-versions"), stderr)
	}
	if !strings.Contains(r.check("controllers.crd-stored-versions"), "--migrate-crds") || e.deploymentGen(ctx, t, "kustomize-controller") != gen {
		t.Fatalf("the stop must name the fix and change nothing: %s", r.check("controllers.crd-stored-versions"))
	}
	r, stderr = e.controllersCLI(t, "", append([]string{"--flux-version", "v2.9.5", "--migrate-crds"}, homelabExtras...)...)
	mustPass(t, r, stderr)
	oci.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	if err := e.client.Get(ctx, clientKey(fluxNS, "ctl-oci"), oci); err != nil {
		t.Fatalf("the migrated OCIRepository is not readable as v1: %v", err)
	}
	_ = e.client.Delete(ctx, oci)
	if !r.Changed || !strings.Contains(r.check("controllers.strict-substitution"), "on by default") {
		t.Fatalf("upgrade: changed=%t strict=%s", r.Changed, r.check("controllers.strict-substitution"))
	}
	for _, name := range runner.Runnable {
		// Each controller's image is the version Flux v2.9.5 ships, which
		// versions.env pins for the sandbox's binary (helm-controller v1.6.4).
		want := e.versions[strings.ToUpper(strings.ReplaceAll(name, "-", "_"))+"_VERSION"]
		if in := e.waitRunning(ctx, t, name); want == "" || in.ImageVersion != want {
			t.Fatalf("%s: runner sees image %s after the upgrade, want %q", name, in.ImageVersion, want)
		}
	}
	t.Logf("controllers actually running after the upgrade: %v", e.runnerRunning())

	// The running controller is strict: a Kustomization using an undefined
	// variable fails.
	repo, sha, err := e.git.CreateRepo(ctx, "ctl-fleet", "")
	if err != nil {
		t.Fatal(err)
	}
	if sha, err = repo.Commit(ctx, "", fleet("v1", ""), "fleet"); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{namespaceObj(appNS), gitRepository("ctl-fleet", repo.URL), ctlKustomization()} {
		if err := e.client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	rev := repo.Revision(sha)
	waitFor(ctx, t, e.client, &kustomizev1.KustomizationList{}, fluxNS, "ctl-strict", func(k *kustomizev1.Kustomization) (bool, string) {
		_, _, msg, _ := readyStatus(k.Generation, k.Status.Conditions)
		return strings.Contains(msg, strictError) && k.Status.LastAttemptedRevision == rev, msg
	})
}

func testControllersNewFlag(t *testing.T, e *env) {
	ctx := timeoutCtx(t, 3*time.Minute)
	dir := t.TempDir()
	shipped, _ := os.ReadFile(filepath.Join(e.root, "overlays", "strict-substitution.yaml"))
	files := map[string]string{
		"kustomization.yaml": "patches:\n  - path: strict-substitution.yaml\n    target: {kind: Deployment, name: kustomize-controller}\n" +
			"  - target: {kind: Deployment, name: kustomize-controller}\n    patch: |\n      - op: add\n        path: /spec/template/spec/containers/0/args/-\n        value: --concurrent=6\n",
		"strict-substitution.yaml": string(shipped),
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen := e.deploymentGen(ctx, t, "kustomize-controller")
	r, stderr := e.controllersCLI(t, "", append([]string{"--flux-version", "v2.9.5", "--overlays", dir, "--dry-run"}, homelabExtras...)...)
	mustPass(t, r, stderr)
	if !r.DryRun || !r.Changed || !slices.Equal(restartsAll(r), []string{"Deployment/flux-system/kustomize-controller"}) {
		t.Fatalf("dry run with a new flag: changed=%t restarts=%v", r.Changed, restartsAll(r))
	}
	if e.deploymentGen(ctx, t, "kustomize-controller") != gen {
		t.Fatal("--dry-run changed the Deployment")
	}
	before := e.runner.Status().Instances["kustomize-controller"]
	r, stderr = e.controllersCLI(t, "", append([]string{"--flux-version", "v2.9.5", "--overlays", dir}, homelabExtras...)...)
	mustPass(t, r, stderr)
	in := e.waitRunning(ctx, t, "kustomize-controller")
	if in.Starts <= before.Starts || !slices.Contains(in.Args, "--concurrent=6") {
		t.Fatalf("the runner did not restart kustomize-controller with the new flag: starts %d→%d args %q", before.Starts, in.Starts, in.Args)
	}
}

// testControllersKilled SIGKILLs the tool right after it printed its plan,
// i.e. during the apply, and proves a re-run converges.
func testControllersKilled(t *testing.T, e *env) {
	ctx := timeoutCtx(t, 3*time.Minute)
	dir := t.TempDir()
	shipped, _ := os.ReadFile(filepath.Join(e.root, "overlays", "strict-substitution.yaml"))
	k := "patches:\n  - path: strict-substitution.yaml\n    target: {kind: Deployment, name: kustomize-controller}\n" +
		"  - target: {kind: Deployment, name: kustomize-controller}\n    patch: |\n      - op: add\n        path: /spec/template/spec/containers/0/args/-\n        value: --concurrent=7\n"
	for n, c := range map[string]string{"kustomization.yaml": k, "strict-substitution.yaml": string(shipped)} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := append([]string{"controllers", "--kubeconfig", e.sb.KubeconfigPath, "--flux-version", "v2.9.5", "--overlays", dir}, homelabExtras...)
	cmd := exec.CommandContext(ctx, bootstrapCLI(t), args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "plan: ") {
		n, err := stderr.Read(buf)
		seen.Write(buf[:n])
		if err != nil {
			t.Fatalf("the tool ended before printing its plan: %v\n%s", err, seen.String())
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	r, out := e.controllersCLI(t, "", append([]string{"--flux-version", "v2.9.5", "--overlays", dir}, homelabExtras...)...)
	mustPass(t, r, out)
	// The killed run could not release its lock: the re-run on the same
	// host sees its process is gone and takes the lock over, saying so.
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "process is gone") {
		t.Errorf("the re-run did not say it took over the killed run's lock: warnings %q", r.Warnings)
	}
	in := e.waitRunning(ctx, t, "kustomize-controller")
	if !slices.Contains(in.Args, "--concurrent=7") || !strings.HasPrefix(r.check("controllers.flags-live"), "pass") {
		t.Fatalf("re-run after SIGKILL did not converge: args %q flags-live %s", in.Args, r.check("controllers.flags-live"))
	}
}

// testControllersPrune drops the image extras: their Deployments, service
// accounts and unused CRDs are pruned; a CRD that still has a custom
// resource is kept (a warning) until --prune-crds.
func testControllersPrune(t *testing.T, e *env) {
	ctx := timeoutCtx(t, 3*time.Minute)
	ir := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
		"metadata": map[string]any{"name": "ctl-images", "namespace": fluxNS},
		"spec":     map[string]any{"image": "127.0.0.1:1/none", "interval": "10m", "suspend": true},
	}}
	if err := e.client.Create(ctx, ir); err != nil {
		t.Fatal(err)
	}
	dry, stderr := e.controllersCLI(t, "", "--flux-version", "v2.9.5", "--dry-run")
	mustPass(t, dry, stderr)
	deleted := func(r cliReport) []string {
		var out []string
		for _, o := range r.Objects {
			if o.Action == "deleted" {
				out = append(out, o.Object)
			}
		}
		return out
	}
	for _, want := range []string{"Deployment/flux-system/image-reflector-controller", "ServiceAccount/flux-system/image-automation-controller", "CustomResourceDefinition/imagepolicies.image.toolkit.fluxcd.io"} {
		if !slices.Contains(deleted(dry), want) {
			t.Fatalf("dry run does not plan to prune %s: %v", want, deleted(dry))
		}
	}
	if slices.Contains(deleted(dry), "CustomResourceDefinition/imagerepositories.image.toolkit.fluxcd.io") || !strings.HasPrefix(dry.check("controllers.prune"), "warn") {
		t.Fatalf("a CRD with a custom resource must be kept with a warning: %v %s", deleted(dry), dry.check("controllers.prune"))
	}
	if dep := e.deployment(ctx, t, "image-reflector-controller"); dep == nil {
		t.Fatal("--dry-run pruned")
	}
	r, stderr := e.controllersCLI(t, "", "--flux-version", "v2.9.5")
	mustPass(t, r, stderr)
	var d appsv1.Deployment
	if err := e.client.Get(ctx, clientKey(fluxNS, "image-reflector-controller"), &d); !apierrors.IsNotFound(err) {
		t.Fatalf("image-reflector-controller not pruned: %v", err)
	}
	if err := e.client.Get(ctx, clientKey(fluxNS, "ctl-images"), ir); err != nil {
		t.Fatalf("the custom resource went with a pruned CRD: %v", err)
	}
	r, stderr = e.controllersCLI(t, "", "--flux-version", "v2.9.5", "--prune-crds")
	mustPass(t, r, stderr)
	if !slices.Contains(deleted(r), "CustomResourceDefinition/imagerepositories.image.toolkit.fluxcd.io") {
		t.Fatalf("--prune-crds did not prune the CRD: %v", deleted(r))
	}
	r, stderr = e.controllersCLI(t, "", "--flux-version", "v2.9.5")
	mustPass(t, r, stderr)
	if r.Changed {
		t.Fatalf("re-run after the prune changed something: %+v", r.Objects)
	}
}

func restarts(r cliReport, obj string) bool { return slices.Contains(restartsAll(r), obj) }

func restartsAll(r cliReport) []string {
	var out []string
	for _, o := range r.Objects {
		if o.Restarts {
			out = append(out, o.Object)
		}
	}
	return out
}

// runnerRunning lists the controllers e's runner runs, with their images.
func (e *env) runnerRunning() []string {
	var out []string
	for n, in := range e.runner.Status().Instances {
		if in.Running {
			out = append(out, fmt.Sprintf("%s (image %s)", n, in.ImageVersion))
		}
	}
	slices.Sort(out)
	return out
}

var schemaNamespace = corev1.SchemeGroupVersion.WithKind("Namespace")

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

func namespaceObj(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// restrictedKubeconfig writes a kubeconfig of e for a ServiceAccount that may do
// everything the install needs except create CustomResourceDefinitions.
func (e *env) restrictedKubeconfig(ctx context.Context, t *testing.T) string {
	t.Helper()
	const name = "bootstrap-restricted"
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"", "apps", "rbac.authorization.k8s.io", "networking.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"*"}},
			{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"get", "list", "watch", "patch"}},
		},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: "default"}},
	}
	for _, o := range []client.Object{sa, role, binding} {
		if err := e.client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	tok, err := e.cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for %s: %v", name, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["sandbox"] = &clientcmdapi.Cluster{Server: e.sb.APIServerURL, CertificateAuthority: e.sb.PKI.CACert}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: tok.Status.Token}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "sandbox", AuthInfo: name}
	cfg.CurrentContext = name
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}
