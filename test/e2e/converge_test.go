//go:build e2e

package e2e

// Step 4 against the sandbox: `bootstrap converge` of the homelab fixture
// (11 Kustomizations over 6 levels, two GitRepositories) after `bootstrap
// sync`: a cold bring-up converges with every node at its revision; an
// undefined ${VAR} fails its node within the retry budget, descendants
// skip; a commit pushed during converge is waited for everywhere; a
// suspended node is reported (exit 1). ensureFlux gives it a cluster
// without the fixture; what it leaves, the next test's ensureFlux removes.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/converge"
)

// convergeNodes are the fixture's Kustomizations.
var convergeNodes = []string{"flux-system", "cni", "monitoring-crds", "platform", "monitoring", "platform-config", "ingress",
	"apps-core", "apps-web", "apps-secrets", "apps-dashboards"}

type convergeRun struct {
	code     int
	stderr   string
	report   cliReport
	facts    map[string]string
	duration time.Duration
}

func (r convergeRun) String() string {
	var b strings.Builder
	b.WriteString(syncRun{code: r.code, report: r.report}.String())
	for _, c := range r.report.Checks {
		if c.Verdict == "fail" {
			for _, e := range c.Evidence {
				b.WriteString("      " + e + "\n")
			}
		}
	}
	for k, v := range r.facts {
		if strings.HasPrefix(k, "converge.") {
			b.WriteString("  fact " + k + " = " + v + "\n")
		}
	}
	return b.String()
}

func convergeCLI(t *testing.T, args ...string) convergeRun {
	t.Helper()
	t0 := time.Now()
	full := append(append([]string{"converge"}, args...), "-o", "json", "--kubeconfig", suite.sb.KubeconfigPath)
	var r convergeRun
	var stdout string
	r.code, stdout, r.stderr, r.report = runJSON(t, exec.Command(bootstrapCLI(t), full...))
	r.duration = time.Since(t0)
	var f struct{ Facts map[string]string }
	if err := json.Unmarshal([]byte(stdout), &f); err != nil {
		t.Fatal(err)
	}
	r.facts = f.Facts
	return r
}

func nodeGate(name string) string { return converge.GateNode.ID + "/" + fluxNS + "/" + name }

func TestConverge(t *testing.T) {
	ctx := timeoutCtx(t, 20*time.Minute)
	ensureFlux(t)
	suite.waitRunning(ctx, t, "kustomize-controller")
	suite.waitRunning(ctx, t, "source-controller")
	if _, found := liveGitRepository(ctx, t); found {
		t.Fatal("precondition: GitRepository flux-system/flux-system already exists")
	}
	// The undefined-variable scenario needs strict substitution: on in the
	// Deployment (ensureFlux's render has it) and in the running controller.
	setStrictGate(ctx, t, true)

	key, enc := sopsFixtureSecret(t, "converge-s3cr3t")
	ids, err := agekey.Parse([]byte(key), "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: agekey.DefaultSecretName},
		Data: map[string][]byte{agekey.DataKey: ids.SecretData()}}); err != nil {
		t.Fatal(err)
	}

	// One sandbox repository serves both sources.
	url := suite.git.URL + "/converge.git"
	edits := map[string]string{
		"clusters/dev/source.yaml":      sourcePatch(url),
		"apps/secrets/secret.sops.yaml": enc,
	}
	repoDir := copyDir(t, filepath.Join(suite.root, "testdata", "homelab"), edits)
	gitRepo, sha, err := suite.git.CreateRepo(ctx, "converge", repoDir)
	if err != nil {
		t.Fatal(err)
	}
	defer gitRepo.Close()
	rev := gitRepo.Revision(sha)
	graphFile := filepath.Join(t.TempDir(), "converge.md")
	args := []string{"--repo", repoDir, "--env", "dev", "--timeout", "4m"}

	t.Run("ColdBringUp", func(t *testing.T) {
		t0 := time.Now()
		s := bootstrapJSON(t, "sync", "--repo", repoDir, "--env", "dev", "--timeout", "3m", "--converge=false")
		if s.code != 0 {
			t.Fatalf("sync dev:\n%s\n%s", s, s.stderr)
		}
		tSync := time.Since(t0)
		r := convergeCLI(t, append(args, "--graph", graphFile)...)
		if r.code != 0 || !strings.HasPrefix(r.report.check(converge.GateGraph.ID), "pass") {
			t.Fatalf("converge after a cold sync:\n%s", r)
		}
		for _, n := range convergeNodes {
			if c := r.report.check(nodeGate(n)); !strings.HasPrefix(c, "pass") || !strings.Contains(c, rev) {
				t.Errorf("%s: %s, want pass at %s", n, c, rev)
			}
		}
		if r.facts["converge.nudges"] == "0" || r.facts["converge.critical-path"] == "" {
			t.Errorf("want nudges and a critical path in the facts:\n%s", r)
		}
		g, err := os.ReadFile(graphFile)
		if err != nil || !strings.Contains(string(g), "flowchart LR") || strings.Count(string(g), ":::pass") != len(convergeNodes) {
			t.Errorf("--graph %s: %v\n%s", graphFile, err, g)
		}
		// The live cluster agrees, with the predicate's own reading.
		for _, n := range convergeNodes {
			waitRevision(ctx, t, n, rev)
		}
		t.Logf("cold bring-up: sync %s, converge %s (%s nudges; critical path %s)", tSync.Round(time.Millisecond), r.duration.Round(time.Millisecond),
			r.facts["converge.nudges"], r.facts["converge.critical-path"])
		for _, n := range convergeNodes {
			t.Logf("  %-16s %s", n, r.facts["converge.timeline."+fluxNS+"/"+n])
		}
	})

	var badRev string
	t.Run("UndefinedVariableFailsFast", func(t *testing.T) {
		cfg := readFixture(t, "platform/config/config.yaml") + "  owner: \"${undefinedOwner}\"\n"
		sha, err := gitRepo.Commit(ctx, "", map[string]string{"platform/config/config.yaml": cfg}, "platform-config: an undefined variable")
		if err != nil {
			t.Fatal(err)
		}
		badRev = gitRepo.Revision(sha)
		// Both sources have the commit before converge starts (else it
		// would rightly find everything converged at the previous one).
		for _, src := range []string{"flux-system", "shared"} {
			requestReconcile(ctx, t, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: src}})
			waitFor(ctx, t, suite.client, &sourcev1.GitRepositoryList{}, fluxNS, src, func(g *sourcev1.GitRepository) (bool, string) {
				return g.Status.Artifact != nil && g.Status.Artifact.Revision == badRev, "artifact not yet at " + badRev
			})
		}
		r := convergeCLI(t, append(args, "--timeout", "3m")...)
		c := r.report.check(nodeGate("platform-config"))
		if r.code != 1 || !strings.HasPrefix(c, "fail") || !strings.Contains(c, "variable not set (strict mode)") {
			t.Fatalf("want platform-config to fail with the strict-mode message:\n%s", r)
		}
		for _, n := range []string{"apps-core", "apps-web", "apps-secrets", "apps-dashboards"} {
			if c := r.report.check(nodeGate(n)); !strings.HasPrefix(c, "skip") || !strings.Contains(c, "blocked by flux-system/platform-config") {
				t.Errorf("%s: %s, want skip blocked by platform-config", n, c)
			}
		}
		for _, n := range []string{"flux-system", "cni", "platform", "ingress", "monitoring"} {
			if c := r.report.check(nodeGate(n)); !strings.HasPrefix(c, "pass") || !strings.Contains(c, badRev) {
				t.Errorf("%s: %s, want pass at %s", n, c, badRev)
			}
		}
		if r.duration > time.Minute {
			t.Errorf("converge took %s to give up on a deterministic failure (timeout 3m)", r.duration)
		}
		t.Logf("undefined variable: exit %d in %s", r.code, r.duration.Round(time.Millisecond))
		for _, c := range r.report.Checks {
			if c.ID == nodeGate("platform-config") || c.ID == nodeGate("apps-web") {
				t.Logf("  %s %s: %s", c.Verdict, c.ID, c.Message)
				for _, e := range c.Evidence {
					t.Logf("      %s", e)
				}
			}
		}
	})

	t.Run("CommitDuringConverge", func(t *testing.T) {
		// converge starts while platform-config fails at badRev (a budget
		// wide enough not to give up); the fix is pushed while it runs.
		type result struct{ r convergeRun }
		done := make(chan result, 1)
		go func() {
			done <- result{convergeCLI(t, append(args, "--retries", "50", "--fail-after", "3m")...)}
		}()
		sha, err := gitRepo.Commit(ctx, "", map[string]string{"platform/config/config.yaml": readFixture(t, "platform/config/config.yaml")}, "platform-config: fixed")
		if err != nil {
			t.Fatal(err)
		}
		fixed := gitRepo.Revision(sha)
		for _, src := range []string{"flux-system", "shared"} {
			requestReconcile(ctx, t, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: src}})
		}
		r := (<-done).r
		if r.code != 0 {
			t.Fatalf("converge across a commit:\n%s", r)
		}
		for _, n := range convergeNodes {
			if c := r.report.check(nodeGate(n)); !strings.Contains(c, fixed) {
				t.Errorf("%s: %s, want pass at the pushed %s", n, c, fixed)
			}
		}
		t.Logf("commit during converge: exit 0 at %s in %s", fixed, r.duration.Round(time.Millisecond))
	})

	t.Run("LiveGraph", func(t *testing.T) { convergeLiveGraph(ctx, t) })

	t.Run("BrokenGraphRefusedBeforeWaiting", func(t *testing.T) {
		web := strings.Replace(readFixture(t, "clusters/base/apps.yaml"), "    - name: apps-core\n  postBuild:", "    - name: apps-core\n    - name: ghost\n  postBuild:", 1)
		broken := copyDir(t, repoDir, map[string]string{"clusters/base/apps.yaml": web})
		r := convergeCLI(t, "--repo", broken, "--env", "dev", "--timeout", "2m")
		c := r.report.check(converge.GateGraph.ID)
		if r.code != 1 || !strings.HasPrefix(c, "fail") || !strings.Contains(c, "flux-system/apps-web depends on flux-system/ghost") ||
			!strings.HasPrefix(r.report.check(converge.GateNode.ID), "skip") || r.duration > 30*time.Second {
			t.Fatalf("want converge.graph to fail naming the dangling edge, nothing awaited:\n%s", r)
		}
	})

	t.Run("SuspendedNodeReported", func(t *testing.T) {
		k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "apps-web"}}
		suspend := func(on bool) {
			p := `{"spec":{"suspend":true}}`
			if !on {
				p = `{"spec":{"suspend":null}}`
			}
			if err := suite.client.Patch(ctx, k, client.RawPatch("application/merge-patch+json", []byte(p))); err != nil {
				t.Fatal(err)
			}
		}
		suspend(true)
		defer suspend(false)
		r := convergeCLI(t, args...)
		c := r.report.check(nodeGate("apps-web"))
		if r.code != 1 || !strings.HasPrefix(c, "fail") || !strings.Contains(c, "suspended") {
			t.Fatalf("want apps-web reported suspended, exit 1:\n%s", r)
		}
		if r.duration > 30*time.Second {
			t.Errorf("converge took %s on a suspended node", r.duration)
		}
	})
}

// convergeLiveGraph: without --repo/--env the graph is the live
// Kustomizations the root leads to. Another one in flux-system (another
// tool's, suspended here) is not this environment's, so it is named as not
// walked, and the walk is the environment's 11.
func convergeLiveGraph(ctx context.Context, t *testing.T) {
	other := kustomization("converge-foreign", "./elsewhere")
	other.Spec.SourceRef.Name, other.Spec.Suspend = "flux-system", true
	if err := suite.client.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = suite.client.Delete(ctx, other) }()
	var live kustomizev1.KustomizationList
	if err := suite.client.List(ctx, &live, client.InNamespace(fluxNS)); err != nil {
		t.Fatal(err)
	}
	var foreign []string
	for _, k := range live.Items {
		if !slices.Contains(convergeNodes, k.Name) {
			foreign = append(foreign, k.Name)
		}
	}
	r := convergeCLI(t, "--timeout", "2m")
	c := r.report.check(converge.GateGraph.ID)
	if r.code != 0 || !strings.HasPrefix(c, "pass: 11 Kustomization(s) over 6 level(s)") {
		t.Fatalf("converge of the live graph:\n%s", r)
	}
	var ev string
	for _, ch := range r.report.Checks {
		if ch.ID == converge.GateGraph.ID {
			ev = strings.Join(ch.Evidence, "\n")
		}
	}
	for _, f := range foreign {
		if !strings.Contains(ev, fluxNS+"/"+f) || !strings.Contains(ev, "not walked") {
			t.Errorf("the live Kustomization %s that the root does not lead to is not named as not walked:\n%s", f, ev)
		}
	}
	for _, n := range convergeNodes {
		if c := r.report.check(nodeGate(n)); !strings.HasPrefix(c, "pass") {
			t.Errorf("%s: %s", n, c)
		}
	}
	t.Logf("live graph: %d nodes walked, %d other Kustomization(s) named as not walked: %v", len(convergeNodes), len(foreign), foreign)
}
