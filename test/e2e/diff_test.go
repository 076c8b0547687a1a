//go:build e2e

package e2e

// `bootstrap diff` proven against the controllers (issue #47 item 7): the
// fixture testdata/diff/e2e is committed at base and head in a repository
// of the sandbox's Git server; diff predicts what head does; base is
// brought up with `bootstrap up`, head pushed and converged with
// `bootstrap converge` (which nudges with the requestedAt annotation: no
// interval timer is waited for); the live objects of every Kustomization's
// inventory are recorded before and after, and every change diff
// predicted must have happened on the cluster, and nothing it did not
// predict may have changed.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/object"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/diff"
)

// diffNS is the namespace of the fixture's objects.
const diffNS = "diffe2e"

// ignoredAnnotations are the annotations the controllers (or this test's
// nudges) write on the repository's objects: not the repository's change.
var ignoredAnnotations = []string{
	"reconcile.fluxcd.io/requestedAt",                  // converge's and fetched's nudges
	"deployment.kubernetes.io/revision",                // kube-controller-manager's deployment controller
	"kubectl.kubernetes.io/last-applied-configuration", // never set by SSA; listed for clarity
}

// liveState is what the test compares of one live object: the object
// without status and without the fields the API server and the controllers
// own (managedFields, resourceVersion, generation, uid, creationTimestamp,
// ignoredAnnotations); nil when absent.
func liveState(u *unstructured.Unstructured) map[string]any {
	if u == nil {
		return nil
	}
	c := u.DeepCopy()
	delete(c.Object, "status")
	for _, f := range []string{"managedFields", "resourceVersion", "generation", "uid", "creationTimestamp"} {
		unstructured.RemoveNestedField(c.Object, "metadata", f)
	}
	if a := c.GetAnnotations(); a != nil {
		for _, k := range ignoredAnnotations {
			delete(a, k)
		}
		if len(a) == 0 {
			unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
		} else {
			c.SetAnnotations(a)
		}
	}
	return c.Object
}

// diffKey is "group/Kind/namespace/name", as diff's ObjectKey and an
// inventory entry both name an object.
func diffKey(group, kind, ns, name string) string {
	return group + "/" + kind + "/" + ns + "/" + name
}

// inventoryObjects is every object in every Kustomization's inventory on
// the cluster, by diffKey, with its GroupVersionKind.
func inventoryObjects(ctx context.Context, t *testing.T) map[string]schema.GroupVersionKind {
	t.Helper()
	var ks kustomizev1.KustomizationList
	if err := suite.client.List(ctx, &ks, client.InNamespace(fluxNS)); err != nil {
		t.Fatal(err)
	}
	out := map[string]schema.GroupVersionKind{}
	for _, k := range ks.Items {
		if k.Status.Inventory == nil {
			continue
		}
		for _, e := range k.Status.Inventory.Entries {
			m, err := object.ParseObjMetadata(e.ID)
			if err != nil {
				t.Fatalf("Kustomization %s's inventory entry %q: %v", k.Name, e.ID, err)
			}
			out[diffKey(m.GroupKind.Group, m.GroupKind.Kind, m.Namespace, m.Name)] = schema.GroupVersionKind{Group: m.GroupKind.Group, Version: e.Version, Kind: m.GroupKind.Kind}
		}
	}
	return out
}

// snapshot reads every object of keys from the cluster (nil: absent).
func snapshot(ctx context.Context, t *testing.T, keys map[string]schema.GroupVersionKind) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for key, gvk := range keys {
		parts := strings.SplitN(key, "/", 4)
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		err := suite.client.Get(ctx, client.ObjectKey{Namespace: parts[2], Name: parts[3]}, u)
		switch {
		case apierrors.IsNotFound(err):
			out[key] = nil
		case err != nil:
			t.Fatalf("get %s: %v", key, err)
		default:
			out[key] = liveState(u)
		}
	}
	return out
}

// prediction is what diff says of one object.
type prediction struct {
	ks     string
	change string
	action string
	pruned bool
}

// runDiff runs `bootstrap diff -o json` and decodes its result; the exit
// code must be want.
func runDiff(t *testing.T, want int, args ...string) *diff.Result {
	t.Helper()
	cmd := exec.Command(bootstrapCLI(t), append(append([]string{"diff"}, args...), "-o", "json")...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	if code := cmd.ProcessState.ExitCode(); code != want {
		t.Fatalf("bootstrap diff %s: exit %d, want %d\n%s\n%s", strings.Join(args, " "), code, want, o.String(), e.String())
	}
	var r diff.Result
	if err := json.Unmarshal(o.Bytes(), &r); err != nil {
		t.Fatalf("bootstrap diff: stdout is not its JSON result: %v\n%s", err, o.String())
	}
	return &r
}

func predictions(r *diff.Result) map[string]prediction {
	out := map[string]prediction{}
	for _, c := range r.Clusters {
		for _, k := range c.Kustomizations {
			for _, o := range k.Objects {
				out[diffKey(o.Key.Group, o.Key.Kind, o.Key.Namespace, o.Key.Name)] = prediction{ks: k.Ref, change: o.Change, action: o.Action, pruned: o.Pruned}
			}
		}
	}
	return out
}

// replaceTree makes dir's files (all but .git) those of src.
func replaceTree(t *testing.T, dir, src string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != ".git" {
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
}

// webReplicaSets are the ReplicaSets of the fixture's Deployment web.
func webReplicaSets(ctx context.Context, t *testing.T) []string {
	t.Helper()
	var rs appsv1.ReplicaSetList
	if err := suite.client.List(ctx, &rs, client.InNamespace(diffNS), client.MatchingLabels{"app": "web"}); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rs.Items {
		out = append(out, r.Name)
	}
	slices.Sort(out)
	return out
}

// judge compares diff's predictions with the live objects before and after
// head (keys: every object of every inventory at base or head): every
// prediction happened, and nothing else among them changed. It returns one
// message per disagreement, sorted.
func judge(pred map[string]prediction, keys map[string]schema.GroupVersionKind, before, after map[string]map[string]any) []string {
	var out []string
	for key, p := range pred {
		b, a := before[key], after[key]
		if _, known := keys[key]; !known {
			out = append(out, fmt.Sprintf("%s (%s, %s): in no Kustomization's inventory at base or head", key, p.change, p.action))
			continue
		}
		same := equality.Semantic.DeepEqual(b, a)
		switch {
		case p.change == diff.Added && (b != nil || a == nil):
			out = append(out, fmt.Sprintf("%s: diff says created; live before %t, after %t", key, b != nil, a != nil))
		case p.change == diff.Removed && p.pruned && (b == nil || a != nil):
			out = append(out, fmt.Sprintf("%s: diff says pruned; live before %t, after %t", key, b != nil, a != nil))
		case p.change == diff.Removed && !p.pruned && (b == nil || a == nil || !same):
			out = append(out, fmt.Sprintf("%s: diff says left on the cluster unchanged; live before %t, after %t", key, b != nil, a != nil))
		case p.change == diff.Changed && (b == nil || a == nil || same):
			out = append(out, fmt.Sprintf("%s: diff says changed (%s); live before %t, after %t, the same: %t", key, p.action, b != nil, a != nil, same))
		}
	}
	for key := range keys {
		b, a := before[key], after[key]
		if equality.Semantic.DeepEqual(b, a) {
			continue
		}
		if _, ok := pred[key]; !ok {
			out = append(out, fmt.Sprintf("%s changed on the cluster (live before %t, after %t) and diff did not predict it", key, b != nil, a != nil))
		}
	}
	slices.Sort(out)
	return out
}

func TestDiffAgainstControllers(t *testing.T) {
	ctx := timeoutCtx(t, 15*time.Minute)
	ensureFlux(t)
	reg := suite.registry
	if _, _, err := reg.PushChart(ctx, filepath.Join(suite.root, "testdata", "charts", "app"), "1.0.0"); err != nil {
		t.Fatal(err)
	}
	err := suite.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: diffNS}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := reg.EnsureCASecret(ctx, suite.client, diffNS, "sandbox-ca"); err != nil {
		t.Fatal(err)
	}

	// The two revisions, pointed at the sandbox's Git server and registry.
	name := freshRepoName("diff")
	url := suite.git.URL + "/" + name + ".git"
	source := fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: %s\n  ref:\n    branch: main\n", url)
	fixture := filepath.Join(suite.root, "testdata", "diff", "e2e")
	var trees [2]string
	for i, rev := range []string{"base", "head"} {
		trees[i] = copyDir(t, filepath.Join(fixture, rev), map[string]string{"clusters/dev/source.yaml": source})
		pointAtRegistry(t, trees[i], map[string]string{"oci://registry.example.invalid/": "oci://" + reg.Host() + "/"})
	}
	repo, baseSHA, err := suite.git.CreateRepo(ctx, name, trees[0])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	// The user's clone: head committed on it, not pushed yet.
	clone := filepath.Join(t.TempDir(), "repo")
	git(t, filepath.Dir(clone), "clone", "--quiet", url, clone)
	replaceTree(t, clone, trees[1])
	git(t, clone, "add", "--all")
	git(t, clone, "commit", "--quiet", "-m", "head")
	headSHA := git(t, clone, "rev-parse", "HEAD")

	// The prediction, before anything is applied.
	t0 := time.Now()
	res := runDiff(t, 0, "--repo", clone, "--env", "dev", "--base", baseSHA, "--head", headSHA)
	pred := predictions(res)
	t.Logf("bootstrap diff in %s: %d object(s) predicted to change", time.Since(t0).Round(time.Millisecond), len(pred))
	want := []struct{ key, change, action string }{
		{diffKey("", "ConfigMap", diffNS, "settings"), diff.Changed, "updated"},
		{diffKey("apps", "Deployment", diffNS, "web"), diff.Changed, "rollout"},
		{diffKey("", "ConfigMap", diffNS, "gone"), diff.Removed, "pruned"},
		{diffKey("", "ConfigMap", diffNS, "left"), diff.Removed, "left on the cluster"},
		{diffKey(helmv2.GroupVersion.Group, "HelmRelease", diffNS, "app"), diff.Changed, "Helm upgrade"},
		{diffKey("", "ConfigMap", diffNS, "added"), diff.Added, "created"},
		{diffKey(kustomizev1.GroupVersion.Group, "Kustomization", fluxNS, "pruning"), diff.Changed, "updated"},
	}
	for _, w := range want {
		p, ok := pred[w.key]
		if !ok || p.change != w.change || !strings.HasPrefix(p.action, w.action) {
			t.Errorf("diff predicts %s: %+v (found %t), want %s with %q", w.key, p, ok, w.change, w.action)
		}
	}
	if len(pred) != len(want) {
		t.Errorf("diff predicts %d changes, want %d: %+v", len(pred), len(want), pred)
	}
	// --charts: the chart of HelmRelease app rendered at both revisions
	// (from the sandbox's registry), to be judged against the manifests
	// helm-controller stores for the release before and after its upgrade.
	caFile := filepath.Join(t.TempDir(), "registry-ca.pem")
	if err := os.WriteFile(caFile, reg.CA(), 0o600); err != nil {
		t.Fatal(err)
	}
	withCharts := runDiff(t, 0, "--repo", clone, "--env", "dev", "--base", baseSHA, "--head", headSHA, "--charts", "--charts-ca-file", caFile)
	chartPred, chartNotes := chartPredictions(withCharts, diffNS+"/app")
	appConfig := chartKey("", "ConfigMap", "app-config")
	if cp := chartPred[appConfig]; cp.change != diff.Changed || !hasLine(cp.diff, '-', "blue.example.test") || !hasLine(cp.diff, '+', "green.example.test") {
		t.Errorf("diff --charts predicts for HelmRelease %s/app: %+v (notes %q); want %s changed from blue to green", diffNS, chartPred, chartNotes, appConfig)
	}
	if got := predictions(withCharts); !samePredictions(got, pred) {
		t.Errorf("diff --charts predicts other object changes than diff: %+v, want %+v", got, pred)
	}
	if t.Failed() {
		t.FailNow()
	}

	// Base on the cluster.
	git(t, clone, "checkout", "--quiet", baseSHA)
	r := bootstrapJSON(t, "up", "--repo", clone, "--env", "dev", "--timeout", "5m", "--fail-after", "90s")
	if r.code != 0 {
		t.Fatalf("up at base:\n%s\nstderr:\n%s", r, r.stderr)
	}
	keys := inventoryObjects(ctx, t)
	before := snapshot(ctx, t, keys)
	relBefore, err := deployedRelease(ctx, suite.client, suite.cs, diffNS, "app")
	if err != nil {
		t.Fatal(err)
	}
	rsBefore := webReplicaSets(ctx, t)
	var web appsv1.Deployment
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: diffNS, Name: "web"}, &web); err != nil {
		t.Fatal(err)
	}
	genBefore := web.Generation

	// Head pushed, fetched, converged.
	git(t, clone, "checkout", "--quiet", "main")
	git(t, clone, "push", "--quiet", "origin", "main")
	fetched(ctx, t, headSHA)
	t1 := time.Now()
	r = bootstrapJSON(t, "converge", "--repo", clone, "--env", "dev", "--timeout", "5m", "--fail-after", "90s")
	if r.code != 0 {
		t.Fatalf("converge at head:\n%s\nstderr:\n%s", r, r.stderr)
	}
	// helm-controller upgrades on the HelmRelease's new generation;
	// converge waited for it to be Ready at that generation.
	relAfter, err := deployedRelease(ctx, suite.client, suite.cs, diffNS, "app")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("head converged in %s", time.Since(t1).Round(time.Millisecond))
	for k, gvk := range inventoryObjects(ctx, t) {
		keys[k] = gvk
	}
	after := snapshot(ctx, t, keys)

	for _, msg := range judge(pred, keys, before, after) {
		t.Error(msg)
	}
	// The judge can fail: a prediction left out (settings' change), a
	// removal said pruned that was left (left), are both caught.
	broken := map[string]prediction{}
	for k, p := range pred {
		broken[k] = p
	}
	delete(broken, diffKey("", "ConfigMap", diffNS, "settings"))
	lp := broken[diffKey("", "ConfigMap", diffNS, "left")]
	lp.pruned = true
	broken[diffKey("", "ConfigMap", diffNS, "left")] = lp
	if got := judge(broken, keys, before, after); len(got) != 2 || !strings.Contains(got[0]+got[1], "settings") || !strings.Contains(got[0]+got[1], "left") {
		t.Errorf("the judge given a broken prediction says %q; want the settings change unpredicted and left not pruned", got)
	}
	// What the controllers did: Helm upgraded the release; the Deployment
	// rolled out (a new generation, a new ReplicaSet from
	// kube-controller-manager).
	if relAfter.Version <= relBefore.Version {
		t.Errorf("diff says Helm upgrade; the release stayed at revision %d", relBefore.Version)
	}
	if got, _ := relAfter.Config["host"].(string); got != "green.example.test" {
		t.Errorf("the upgraded release has host %q, want green.example.test", got)
	}
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: diffNS, Name: "web"}, &web); err != nil {
		t.Fatal(err)
	}
	var rsAfter []string
	deadline := time.Now().Add(30 * time.Second)
	for rsAfter = webReplicaSets(ctx, t); len(rsAfter) <= len(rsBefore) && time.Now().Before(deadline); rsAfter = webReplicaSets(ctx, t) {
		time.Sleep(200 * time.Millisecond)
	}
	if web.Generation <= genBefore || len(rsAfter) <= len(rsBefore) {
		t.Errorf("diff says rollout; Deployment web generation %d → %d, ReplicaSets %v → %v", genBefore, web.Generation, rsBefore, rsAfter)
	}
	// The chart's render: what diff --charts predicted is what
	// helm-controller applied (its stored manifests, after its
	// post-renderers), and the judge fails a prediction with a value
	// helm-controller never applied.
	mBefore, err := manifestObjects(relBefore.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	mAfter, err := manifestObjects(relAfter.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range judgeCharts(chartPred, mBefore, mAfter) {
		t.Error(msg)
	}
	if got := judgeCharts(brokenChartPrediction(chartPred), mBefore, mAfter); len(got) != 1 || !strings.Contains(got[0], "purple") {
		t.Errorf("the chart judge given a broken prediction says %q; want the line helm-controller never applied", got)
	}
	t.Logf("diff --charts: %d chart object(s) predicted to change, judged against helm-controller's manifests of %d and %d object(s)", len(chartPred), len(mBefore), len(mAfter))
	var cm corev1.ConfigMap
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: diffNS, Name: "app-config"}, &cm); err != nil {
		t.Fatal(err)
	} else if cm.Data["host"] != "green.example.test" {
		t.Errorf("diff --charts predicts ConfigMap app-config host green.example.test; the live one has %q", cm.Data["host"])
	}
	t.Logf("Helm release app v%d → v%d; Deployment web generation %d → %d, ReplicaSets %v → %v; %d repository object(s) compared",
		relBefore.Version, relAfter.Version, genBefore, web.Generation, rsBefore, rsAfter, len(keys))
}

// diffJSON runs `bootstrap diff -o json`: its result and exit code.
func diffJSON(ctx context.Context, t testing.TB, args ...string) (*diff.Result, int, error) {
	cmd := exec.CommandContext(ctx, bootstrapCLI(t), append(append([]string{"diff"}, args...), "-o", "json")...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return nil, 0, err
	}
	var r diff.Result
	if err := json.Unmarshal(o.Bytes(), &r); err != nil {
		return nil, 0, fmt.Errorf("bootstrap diff %s: stdout is not its JSON result (exit %d): %v\n%s\n%s", strings.Join(args, " "), cmd.ProcessState.ExitCode(), err, o.String(), e.String())
	}
	return &r, cmd.ProcessState.ExitCode(), nil
}

// incidentPrediction is what `bootstrap diff` says of the gauntlet's
// incident commit (the knob k8sServiceHost lost from cluster-vars), at the
// release the tool's overlay runs (strict substitution: the gate on) and
// at Flux v2.4.0 (not strict: the gate off, as Flux 2.4 ran).
type incidentPrediction struct {
	// strictFail is the cilium Kustomization's FAIL with the gate on.
	strictFail string
	// openAction and openDiff are HelmRelease kube-system/cilium's with
	// the gate off.
	openAction, openDiff string
	// windows counts the WINDOW steps at either release.
	windows int
}

// predictIncident clones the incident's repository (url, its last commit
// the incident) into dir and diffs HEAD~1 → HEAD at both releases.
func predictIncident(ctx context.Context, t testing.TB, url, dir string) (*incidentPrediction, error) {
	if out, err := exec.CommandContext(ctx, "git", "clone", "--quiet", url, dir).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("git clone %s: %v\n%s", url, err, out)
	}
	args := []string{"--repo", dir, "--env", "dev", "--base", "HEAD~1", "--head", "HEAD"}
	p := &incidentPrediction{}
	on, code, err := diffJSON(ctx, t, args...)
	if err != nil {
		return nil, err
	}
	if code != 1 {
		return nil, fmt.Errorf("bootstrap diff of the incident commit (strict): exit %d, want 1 (cilium fails at head)", code)
	}
	off, code, err := diffJSON(ctx, t, append(args, "--flux-version", "v2.4.0")...)
	if err != nil {
		return nil, err
	}
	if code != 0 {
		return nil, fmt.Errorf("bootstrap diff --flux-version v2.4.0 of the incident commit: exit %d, want 0", code)
	}
	for _, c := range on.Clusters {
		p.windows += len(c.Windows)
		for _, k := range c.Kustomizations {
			if k.Ref == "flux-system/cilium" {
				p.strictFail = k.Fail
			}
		}
	}
	for _, c := range off.Clusters {
		p.windows += len(c.Windows)
		for _, k := range c.Kustomizations {
			for _, o := range k.Objects {
				if o.Key.Kind == "HelmRelease" && o.Key.Namespace == "kube-system" && o.Key.Name == "cilium" {
					p.openAction, p.openDiff = o.Action, o.Diff
				}
			}
		}
	}
	return p, nil
}

// nullKnob is the line diff's unified diff of the cilium HelmRelease holds
// when the knob renders empty: the unquoted ${k8sServiceHost} substituted
// with "" is YAML null.
const nullKnob = "+    " + incidentKnob + ": null"

// checkGateOn: diff predicted the cilium Kustomization failing, strict,
// naming the knob, and no window.
func (p *incidentPrediction) checkGateOn() error {
	if !strings.Contains(p.strictFail, strictError) || !strings.Contains(p.strictFail, incidentKnob) {
		return fmt.Errorf("bootstrap diff of the incident commit: cilium's FAIL %q, want %q naming %s", p.strictFail, strictError, incidentKnob)
	}
	// No WINDOW: the commit removes the knob (a window is a knob added or
	// changed, rendered as it was), and cilium dependsOn flux-system, which
	// applies cluster-vars. What the cluster gets is the head render itself.
	if p.windows != 0 {
		return fmt.Errorf("bootstrap diff of the incident commit shows %d WINDOW step(s); cilium waits for flux-system, which applies cluster-vars", p.windows)
	}
	return nil
}

// checkGateOff: diff predicted the Helm upgrade with the knob null, and
// the release helm-controller installed holds it null (observed).
func (p *incidentPrediction) checkGateOff(observed string) error {
	if !strings.HasPrefix(p.openAction, "Helm upgrade") || !strings.Contains(p.openDiff, nullKnob) {
		return fmt.Errorf("bootstrap diff --flux-version v2.4.0 of the incident commit: HelmRelease kube-system/cilium %q, diff %q; want a Helm upgrade with %q", p.openAction, p.openDiff, nullKnob)
	}
	if observed != "null" {
		return fmt.Errorf("diff predicted %s null in the cilium release; helm-controller installed %s", incidentKnob, observed)
	}
	return nil
}

// evidence is the prediction in one line, for the gauntlet's page.
func (p *incidentPrediction) evidence() string {
	return fmt.Sprintf("`bootstrap diff` of the incident commit, before it is applied: gate on (strict) FAIL Kustomization flux-system/cilium: %s; gate off (--flux-version v2.4.0) HelmRelease kube-system/cilium: %s, `%s`; WINDOW steps: %d (cilium waits for flux-system, which applies cluster-vars)",
		firstLineOf(p.strictFail), p.openAction, strings.TrimPrefix(nullKnob, "+    "), p.windows)
}

func firstLineOf(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestGauntletIncident runs the gauntlet's incident stage alone (its own
// sandbox, the HelmRelease fixture, the chart registry): the seed incident
// replayed, gate on then off, with diff's prediction of the commit judged
// against both.
func TestGauntletIncident(t *testing.T) {
	ctx := timeoutCtx(t, 20*time.Minute)
	g := &gauntlet{t: t, tmp: t.TempDir(), stateDir: t.TempDir()}
	s := &stageResult{Key: "incident"}
	err := g.stageIncident(ctx, s, false)
	for _, e := range s.Evidence {
		t.Log(e)
	}
	if err != nil {
		t.Fatal(err)
	}
}
