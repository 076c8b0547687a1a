//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/ssa"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
	"github.com/homelab-ops/bootstrap/internal/sandbox/runner"
)

const (
	fluxNS      = "flux-system"
	appNS       = "e2e-apps"
	strictError = "variable not set (strict mode)"
)

// fleet is the fixture GitOps repository: infra (a namespace and a
// ConfigMap), apps (dependsOn infra) and strict (uses an undefined variable).
func fleet(appValue, strictSuffix string) map[string]string {
	return map[string]string{
		"infra/namespace.yaml": fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", appNS),
		"infra/config.yaml":    fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: infra\n  namespace: %s\ndata:\n  tier: infra\n", appNS),
		"apps/app.yaml":        fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: %s\ndata:\n  value: %q\n", appNS, appValue),
		"strict/strict.yaml": fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: strict\n  namespace: %s\ndata:\n"+
			"  defined: \"${SANDBOX_DEFINED}\"\n  undefined: \"before-${SANDBOX_UNDEFINED}-after%s\"\n", appNS, strictSuffix),
	}
}

// TestFlux runs the scenarios in order, from ensureFlux's state: each
// needs the state the previous one left (Flux installed, controllers
// running, sources ready).
func TestFlux(t *testing.T) {
	ensureFlux(t)
	steps := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"RenderAppliedDeploymentsAvailable", testRenderApplied},
		{"RunnerRunsControllersFromDeployments", testRunnerStarted},
		{"GitSourceAndDependentKustomizations", testGitAndKustomizations},
		{"PushedCommitPropagates", testPushPropagates},
		{"StrictSubstitutionThroughDeploymentArgs", testStrictBothWays},
		{"NegativeControlRunnerIgnoringArgs", testIgnoreArgsNegativeControl},
		{"ControllerDeathReportedWithLogTail", testControllerDeath},
	}
	for _, s := range steps {
		if !t.Run(s.name, s.fn) {
			t.Fatalf("%s failed; later scenarios depend on it and were not run", s.name)
		}
	}
}

var state struct {
	repo      *gitserver.Repo
	sha       string
	dep       map[string]string // deployment name → template hash after apply
	strictCfg string
}

func testRenderApplied(t *testing.T) {
	ctx := timeoutCtx(t, 3*time.Minute)
	objs := render(t, "--flux-version", "v2.9.5")
	t0 := time.Now()
	rm := resourceManager()
	cs, err := rm.ApplyAllStaged(ctx, objs, ssa.DefaultApplyOptions())
	if err != nil {
		t.Fatalf("server-side apply of the render: %v", err)
	}
	for _, e := range cs.Entries {
		if e.Action != ssa.CreatedAction && e.Action != ssa.ConfiguredAction && e.Action != ssa.UnchangedAction {
			t.Errorf("apply %s: unexpected action %s", e.Subject, e.Action)
		}
	}
	// Readiness by kstatus: a Deployment is Current only when Available.
	if err := rm.WaitForSetWithContext(ctx, cs.ToObjMetadataSet(), ssa.WaitOptions{Interval: 500 * time.Millisecond, Timeout: 2 * time.Minute}); err != nil {
		t.Fatalf("rendered objects not ready: %v", err)
	}
	var deps appsv1.DeploymentList
	if err := suite.client.List(ctx, &deps, client.InNamespace(fluxNS)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range deps.Items {
		names = append(names, d.Name)
		avail := false
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentAvailable && c.Status == corev1.ConditionTrue {
				avail = true
			}
		}
		if !avail || d.Status.AvailableReplicas < 1 {
			t.Errorf("deployment %s not Available (kwok should have made its pod Ready): %+v", d.Name, d.Status)
		}
	}
	for _, want := range []string{"helm-controller", "kustomize-controller", "notification-controller", "source-controller"} {
		if !slices.Contains(names, want) {
			t.Fatalf("flux-system deployments %v lack %s", names, want)
		}
	}
	t.Logf("render applied (%d objects) and Available in %s", len(objs), time.Since(t0).Round(time.Millisecond))

	// Negative: re-applying the same render changes nothing.
	cs2, err := rm.ApplyAllStaged(ctx, render(t, "--flux-version", "v2.9.5"), ssa.DefaultApplyOptions())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cs2.Entries {
		if e.Action != ssa.UnchangedAction {
			t.Errorf("re-apply changed %s: %s", e.Subject, e.Action)
		}
	}
}

// deployment reads the flux-system Deployment name of e.
func (e *env) deployment(ctx context.Context, t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := e.client.Get(ctx, types.NamespacedName{Namespace: fluxNS, Name: name}, d); err != nil {
		t.Fatalf("get deployment %s: %v", name, err)
	}
	return d
}

// waitRunning waits until e's runner runs name from the Deployment's
// current pod template.
func (e *env) waitRunning(ctx context.Context, t testing.TB, name string) runner.Instance {
	t.Helper()
	in, err := e.waitRunnerFor(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// waitRunnerFor waits until the runner runs name from the Deployment's
// current template and returns that instance.
func (e *env) waitRunnerFor(ctx context.Context, name string) (runner.Instance, error) {
	var d appsv1.Deployment
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: name}, &d); err != nil {
		return runner.Instance{}, err
	}
	hash := runner.TemplateHash(&d.Spec.Template)
	err := e.runner.WaitFor(ctx, func(st runner.Status) bool {
		in := st.Instances[name]
		return in.Ready && in.TemplateHash == hash
	})
	if err != nil {
		return e.runner.Status().Instances[name], fmt.Errorf("%s not running from template %s: %w", name, hash, err)
	}
	return e.runner.Status().Instances[name], nil
}

func testRunnerStarted(t *testing.T) {
	ctx := timeoutCtx(t, time.Minute)
	for _, name := range runner.Runnable {
		in := suite.waitRunning(ctx, t, name)
		d := suite.deployment(ctx, t, name)
		c, err := runner.ManagerContainer(d)
		if err != nil {
			t.Fatal(err)
		}
		// Every Deployment arg whose flag is not an address reaches the process.
		for _, a := range c.Args {
			if strings.Contains(a, "-addr=") || strings.HasPrefix(a, "--storage-path=") {
				continue
			}
			if a == "--enable-leader-election" {
				if !strings.Contains(strings.Join(in.Notes, "\n"), "--enable-leader-election dropped") {
					t.Errorf("%s: leader election dropped without a note: %q", name, in.Notes)
				}
				continue
			}
			if !slices.Contains(in.Args, a) {
				t.Errorf("%s: deployment arg %s not passed to the local process %q", name, a, in.Args)
			}
		}
		if !slices.Contains(in.Env, "RUNTIME_NAMESPACE="+fluxNS) {
			t.Errorf("%s: fieldRef env RUNTIME_NAMESPACE not resolved: %q", name, in.Env)
		}
		t.Logf("%s pid %d args %q", name, in.Pid, in.Args)
	}
	kc := suite.runner.Status().Instances["kustomize-controller"]
	if g := runner.EffectiveGates(kc.Args)[runner.StrictGate]; g != "true" {
		t.Errorf("kustomize-controller runs with %s=%q; the render's overlay sets true", runner.StrictGate, g)
	}
	// Controllers the sandbox has no binary for are reported, not ignored.
	var unsupported []string
	for _, u := range suite.runner.Unsupported() {
		unsupported = append(unsupported, u.Deployment)
	}
	for _, want := range []string{"notification-controller"} {
		if !slices.Contains(unsupported, want) {
			t.Errorf("unsupported controllers reported: %v, lacks %s", unsupported, want)
		}
	}
	for _, runnable := range runner.Runnable {
		if slices.Contains(unsupported, runnable) {
			t.Errorf("%s reported unsupported: %v", runnable, unsupported)
		}
	}
}

func gitRepository(name, url string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fluxNS},
		Spec: sourcev1.GitRepositorySpec{
			URL:       url,
			Interval:  metav1.Duration{Duration: 10 * time.Minute},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
		},
	}
}

func kustomization(name, path string, dependsOn ...string) *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fluxNS},
		Spec: kustomizev1.KustomizationSpec{
			Interval:      metav1.Duration{Duration: 10 * time.Minute},
			RetryInterval: &metav1.Duration{Duration: 5 * time.Second},
			Path:          path,
			Prune:         true,
			SourceRef:     kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: "fleet"},
		},
	}
	for _, d := range dependsOn {
		k.Spec.DependsOn = append(k.Spec.DependsOn, meta.DependencyReference{Name: d})
	}
	return k
}

// waitSourceRevision waits until the GitRepository's artifact is at revision.
func waitSourceRevision(ctx context.Context, t *testing.T, revision string) {
	t.Helper()
	waitFor(ctx, t, suite.client, &sourcev1.GitRepositoryList{}, fluxNS, "fleet", func(g *sourcev1.GitRepository) (bool, string) {
		st, reason, msg, cur := readyStatus(g.Generation, g.Status.Conditions)
		rev := ""
		if g.Status.Artifact != nil {
			rev = g.Status.Artifact.Revision
		}
		return st == metav1.ConditionTrue && cur && rev == revision, fmt.Sprintf("Ready=%s %s %q artifact=%s", st, reason, msg, rev)
	})
}

// waitApplied waits until the Kustomization is Ready with
// lastAppliedRevision == revision.
func waitApplied(ctx context.Context, t *testing.T, name, revision string) *kustomizev1.Kustomization {
	t.Helper()
	return waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, name, func(k *kustomizev1.Kustomization) (bool, string) {
		st, reason, msg, cur := readyStatus(k.Generation, k.Status.Conditions)
		return st == metav1.ConditionTrue && cur && k.Status.LastAppliedRevision == revision,
			fmt.Sprintf("Ready=%s %s %q lastApplied=%s", st, reason, msg, k.Status.LastAppliedRevision)
	})
}

func configMap(ctx context.Context, t *testing.T, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := suite.cs.CoreV1().ConfigMaps(appNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configmap %s/%s: %v", appNS, name, err)
	}
	return cm
}

func testGitAndKustomizations(t *testing.T) {
	ctx := timeoutCtx(t, 2*time.Minute)
	var err error
	state.repo, state.sha, err = suite.git.CreateRepo(ctx, "fleet", "")
	if err != nil {
		t.Fatal(err)
	}
	if state.sha, err = state.repo.Commit(ctx, "", fleet("v1", ""), "fleet v1"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	for _, o := range []client.Object{gitRepository("fleet", state.repo.URL), kustomization("infra", "./infra"), kustomization("apps", "./apps", "infra")} {
		if err := suite.client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	rev := state.repo.Revision(state.sha)
	waitSourceRevision(ctx, t, rev)
	tSource := time.Since(t0)
	infra := waitApplied(ctx, t, "infra", rev)
	// As converge does: the dependent is asked to reconcile once its
	// dependency applied, not left to the 30 s dependency requeue.
	requestReconcile(ctx, t, kustomization("apps", ""))
	apps := waitApplied(ctx, t, "apps", rev)
	t.Logf("GitRepository ready at %s after %s; infra and apps applied after %s", rev, tSource.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	if got := configMap(ctx, t, "app").Data["value"]; got != "v1" {
		t.Fatalf("apps ConfigMap value %q, want v1", got)
	}
	// dependsOn is honoured: apps cannot have applied before infra did.
	infraAt := apimetaReadyTime(infra.Status.Conditions)
	appsAt := apimetaReadyTime(apps.Status.Conditions)
	if appsAt.Before(infraAt) {
		t.Fatalf("apps became Ready (%s) before its dependency infra (%s)", appsAt, infraAt)
	}
}

func apimetaReadyTime(conds []metav1.Condition) time.Time {
	for _, c := range conds {
		if c.Type == "Ready" {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func testPushPropagates(t *testing.T) {
	ctx := timeoutCtx(t, 2*time.Minute)
	old := state.sha
	var err error
	if state.sha, err = state.repo.Commit(ctx, "", fleet("v2", ""), "fleet v2"); err != nil {
		t.Fatal(err)
	}
	if state.sha == old {
		t.Fatal("push did not create a new commit")
	}
	t0 := time.Now()
	requestReconcile(ctx, t, gitRepository("fleet", ""))
	rev := state.repo.Revision(state.sha)
	waitSourceRevision(ctx, t, rev)
	waitApplied(ctx, t, "infra", rev)
	requestReconcile(ctx, t, kustomization("apps", ""))
	waitApplied(ctx, t, "apps", rev)
	if got := configMap(ctx, t, "app").Data["value"]; got != "v2" {
		t.Fatalf("after push: apps ConfigMap value %q, want v2", got)
	}
	t.Logf("commit %s propagated in %s", state.sha[:8], time.Since(t0).Round(time.Millisecond))
}

// setStrictGate rewrites kustomize-controller's --feature-gates arg in the
// live Deployment (the operator's edit) and waits for the runner to restart
// the controller from the new template.
func setStrictGate(ctx context.Context, t *testing.T, on bool) runner.Instance {
	t.Helper()
	d := suite.deployment(ctx, t, "kustomize-controller")
	idx := -1
	c := d.Spec.Template.Spec.Containers
	ci := slices.IndexFunc(c, func(c corev1.Container) bool { return c.Name == "manager" })
	for i, a := range c[ci].Args {
		if strings.HasPrefix(a, "--feature-gates=") && strings.Contains(a, runner.StrictGate) {
			idx = i
		}
	}
	val := fmt.Sprintf("--feature-gates=%s=%t", runner.StrictGate, on)
	op := "add"
	path := fmt.Sprintf("/spec/template/spec/containers/%d/args/-", ci)
	if idx >= 0 {
		op, path = "replace", fmt.Sprintf("/spec/template/spec/containers/%d/args/%d", ci, idx)
	}
	patch, _ := json.Marshal([]map[string]string{{"op": op, "path": path, "value": val}})
	before := suite.runner.Status().Instances["kustomize-controller"]
	if err := suite.client.Patch(ctx, d, client.RawPatch(types.JSONPatchType, patch)); err != nil {
		t.Fatalf("patch kustomize-controller args: %v", err)
	}
	in := suite.waitRunning(ctx, t, "kustomize-controller")
	if in.TemplateHash != before.TemplateHash && in.Starts <= before.Starts {
		t.Fatalf("template changed but the controller was not restarted (starts %d → %d)", before.Starts, in.Starts)
	}
	if g := runner.EffectiveGates(in.Args)[runner.StrictGate]; g != fmt.Sprint(on) {
		t.Fatalf("controller runs with %s=%q after the Deployment edit, want %t: %q", runner.StrictGate, g, on, in.Args)
	}
	return in
}

func strictKustomization() *kustomizev1.Kustomization {
	k := kustomization("strict", "./strict", "infra")
	k.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{"SANDBOX_DEFINED": "sandbox-defined"}}
	return k
}

// waitStrictFailed waits for the strict-mode failure at revision.
func waitStrictFailed(ctx context.Context, t *testing.T, revision string) {
	t.Helper()
	// Asked to reconcile every 2 s, as converge nudges: a reconcile that met
	// a restarting controller or a dependency not applied yet would
	// otherwise wait out a 30 s requeue.
	nctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for nctx.Err() == nil {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
			_ = suite.client.Patch(nctx, strictKustomization(), client.RawPatch("application/merge-patch+json", []byte(patch)))
			select {
			case <-nctx.Done():
			case <-time.After(2 * time.Second):
			}
		}
	}()
	waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, "strict", func(k *kustomizev1.Kustomization) (bool, string) {
		st, reason, msg, _ := readyStatus(k.Generation, k.Status.Conditions)
		return st == metav1.ConditionFalse && strings.Contains(msg, strictError) && k.Status.LastAttemptedRevision == revision,
			fmt.Sprintf("Ready=%s %s %q attempted=%s", st, reason, msg, k.Status.LastAttemptedRevision)
	})
}

func testStrictBothWays(t *testing.T) {
	ctx := timeoutCtx(t, 3*time.Minute)
	rev := state.repo.Revision(state.sha)
	// Gate on, set explicitly in the Deployment args (the render's overlay
	// already does; the edit below proves the runner follows the object).
	setStrictGate(ctx, t, true)
	if err := suite.client.Create(ctx, strictKustomization()); err != nil {
		t.Fatal(err)
	}
	waitStrictFailed(ctx, t, rev)
	if _, err := suite.cs.CoreV1().ConfigMaps(appNS).Get(ctx, "strict", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("strict mode failed the Kustomization but the ConfigMap exists anyway (err=%v)", err)
	}
	t.Logf("gate on: %q", strictError)

	// Gate off through the Deployment: the runner restarts the controller,
	// and the same Kustomization renders the undefined variable as "".
	t0 := time.Now()
	setStrictGate(ctx, t, false)
	requestReconcile(ctx, t, strictKustomization())
	waitApplied(ctx, t, "strict", rev)
	cm := configMap(ctx, t, "strict")
	if cm.Data["undefined"] != "before--after" || cm.Data["defined"] != "sandbox-defined" {
		t.Fatalf("gate off: ConfigMap data %v, want undefined=before--after (empty substitution) and defined=sandbox-defined", cm.Data)
	}
	t.Logf("gate off: undefined variable rendered as empty string, %s after the Deployment edit", time.Since(t0).Round(time.Millisecond))
}

// The strict-off scenario above is load-bearing only if the runner passes
// the Deployment's args: a runner that ignores them runs the v1.9.5 default
// (strict on), and the Kustomization fails where the test expects "".
func testIgnoreArgsNegativeControl(t *testing.T) {
	ctx := timeoutCtx(t, 3*time.Minute)
	if g := runner.EffectiveGates(suite.runner.Status().Instances["kustomize-controller"].Args)[runner.StrictGate]; g != "false" {
		t.Fatalf("precondition: gate should be off in the Deployment, runner has %q", g)
	}
	suite.stopRunner()
	if err := suite.startRunner(true); err != nil {
		t.Fatal(err)
	}
	defer func() {
		suite.stopRunner()
		if err := suite.startRunner(false); err != nil {
			t.Fatal(err)
		}
		suite.waitRunning(ctx, t, "kustomize-controller")
		suite.waitRunning(ctx, t, "source-controller")
	}()
	in := suite.waitRunning(ctx, t, "kustomize-controller")
	if slices.Contains(in.Args, "--log-level=info") {
		t.Fatalf("negative-control runner passed deployment args: %q", in.Args)
	}
	// A new commit for strict forces a fresh build of the same manifests.
	var err error
	if state.sha, err = state.repo.Commit(ctx, "", fleet("v2", "-2"), "strict again"); err != nil {
		t.Fatal(err)
	}
	requestReconcile(ctx, t, gitRepository("fleet", ""))
	rev := state.repo.Revision(state.sha)
	waitSourceRevision(ctx, t, rev)
	waitStrictFailed(ctx, t, rev)
	t.Logf("ignoring Deployment args: the gate-off Deployment still fails with %q, so the gate-off assertion would fail", strictError)
}

func testControllerDeath(t *testing.T) {
	ctx := timeoutCtx(t, 2*time.Minute)
	before := suite.waitRunning(ctx, t, "source-controller")
	if err := syscall.Kill(before.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := suite.runner.WaitFor(ctx, func(st runner.Status) bool {
		in := st.Instances["source-controller"]
		return in.Ready && in.Starts > before.Starts
	}); err != nil {
		t.Fatal(err)
	}
	after := suite.runner.Status().Instances["source-controller"]
	if !strings.Contains(after.LastExit, "signal: killed") || !strings.Contains(after.LastExit, "last lines of") {
		t.Fatalf("death not reported with the log tail: %q", after.LastExit)
	}
	if after.Pid == before.Pid {
		t.Fatal("same pid after restart")
	}
	t.Logf("reported: %s", firstLine(after.LastExit))
	// Negative: the control plane itself saw no death.
	if err := suite.sb.Check(); err != nil {
		t.Fatalf("control plane process died: %v", err)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// The v2.4.0 render runs the v1.9.5 binary: the runner says so and keeps
// the old default (strict off) unless the Deployment sets the gate.
func TestOldFluxRenderPlan(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  string
		extra bool
	}{
		{args: []string{"--flux-version", "v2.4.0", "--plain"}, want: "false", extra: true},
		{args: []string{"--flux-version", "v2.4.0"}, want: "true", extra: false},
	} {
		var dep *appsv1.Deployment
		for _, o := range render(t, tc.args...) {
			if o.GetKind() == "Deployment" && o.GetName() == "kustomize-controller" {
				dep = &appsv1.Deployment{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, dep); err != nil {
					t.Fatal(err)
				}
			}
		}
		if dep == nil {
			t.Fatalf("render %v: no kustomize-controller Deployment", tc.args)
		}
		p, err := runner.BuildPlan(dep, runner.PlanInput{Controller: "kustomize-controller", BinaryVersion: suite.versions["KUSTOMIZE_CONTROLLER_VERSION"], Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if g := runner.EffectiveGates(p.Args)[runner.StrictGate]; g != tc.want {
			t.Errorf("render %v: effective %s=%q, want %s (args %q)", tc.args, runner.StrictGate, g, tc.want, p.Args)
		}
		injected := slices.Contains(p.Args, "--feature-gates="+runner.StrictGate+"=false")
		if injected != tc.extra {
			t.Errorf("render %v: gate injected=%t, want %t", tc.args, injected, tc.extra)
		}
		if !strings.Contains(strings.Join(p.Notes, "\n"), "v1.4.0 but the sandbox runs the "+suite.versions["KUSTOMIZE_CONTROLLER_VERSION"]) {
			t.Errorf("render %v: version mismatch not reported: %q", tc.args, p.Notes)
		}
	}
}
