//go:build e2e

package e2e

// `bootstrap status` against the sandbox: after an `up` of the homelab
// fixture's dev environment it exits 0 and sends only reads; each broken
// state — the strict flag removed from the live kustomize-controller
// Deployment, a Kustomization failing on an undefined variable, the age-key
// Secret replaced by another key, the root's source left on a temporary
// source — gives exit 1 naming it, and the state is restored after each.
// Every case starts from that state (statusFixture, one stage): it runs
// alone (-run 'TestStatus/Case'), and in a whole run each reuses what the
// case before restored, so the `up` is paid once.

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
	"github.com/homelab-ops/bootstrap/internal/sandbox/runner"
	"github.com/homelab-ops/bootstrap/internal/status"
)

type statusRun struct {
	code     int
	stdout   string
	stderr   string
	report   cliReport
	facts    map[string]string
	duration time.Duration
}

func (r statusRun) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d in %s, error %q\n", r.code, r.duration.Round(time.Millisecond), r.report.Error)
	for _, c := range r.report.Checks {
		fmt.Fprintf(&b, "  %s %s: %s\n", c.Verdict, c.ID, c.Message)
		if c.Verdict == "fail" || c.Verdict == "skip" {
			for _, e := range c.Evidence {
				fmt.Fprintf(&b, "      %s\n", e)
			}
		}
	}
	fmt.Fprintf(&b, "  facts: %v\n", r.facts)
	return b.String()
}

// statusCLI runs `bootstrap status … -o json` against the sandbox and
// checks, on every run, that only reads were sent.
func statusCLI(t *testing.T, args ...string) statusRun {
	t.Helper()
	full := append(append([]string{"status"}, args...), "-o", "json", "--kubeconfig", suite.sb.KubeconfigPath)
	var r statusRun
	t0 := time.Now()
	r.code, r.stdout, r.stderr, r.report = runJSON(t, exec.Command(bootstrapCLI(t), full...))
	r.duration = time.Since(t0)
	var f struct{ Facts map[string]string }
	if err := json.Unmarshal([]byte(r.stdout), &f); err != nil {
		t.Fatal(err)
	}
	r.facts = f.Facts
	readOnly(t, r)
	return r
}

// readOnly: the run's own record of its requests (the read-only transport
// refuses and records anything but a GET) holds reads only, and some.
func readOnly(t *testing.T, r statusRun) {
	t.Helper()
	if c := r.report.check(status.GateReadOnly.ID); !strings.HasPrefix(c, "pass") {
		t.Errorf("status.read-only: %s\n%s", c, r)
	}
	reads := 0
	for _, part := range strings.Split(r.facts["apiRequests"], ", ") {
		verb, n, ok := strings.Cut(part, " ")
		if !ok || !slices.Contains([]string{"get", "list", "watch"}, verb) {
			t.Errorf("status sent a request that is not a read: %q (apiRequests %q)", part, r.facts["apiRequests"])
			continue
		}
		var k int
		fmt.Sscan(n, &k)
		reads += k
	}
	if reads == 0 {
		t.Errorf("no read recorded: apiRequests %q", r.facts["apiRequests"])
	}
}

// verdictOf is the verdict of a check, or "missing".
func (r statusRun) verdict(id string) string {
	v, _, _ := strings.Cut(r.report.check(id), ":")
	return v
}

// statusFixture is the state every TestStatus case starts from:
// ensureFlux's (nothing of the homelab fixture), then one `up` of dev from
// a repository of the suite's Git server, every Kustomization Ready at rev.
// A case that breaks it restores it before it ends.
type statusFixture struct {
	dir     string // where repository directories go; lives as long as TestStatus
	key     string // the age key the cluster holds
	url     string // the repository's URL, both sources'
	repoDir string
	gitRepo *gitserver.Repo
	rev     string   // the revision every Kustomization is at
	env     []string // --repo DIR --env dev
}

// breakPlatformConfig commits cfg as platform/config/config.yaml, has both
// sources fetch it and waits until kustomize-controller fails
// platform-config at that revision with a message containing want; it
// returns the revision. When the test ends the fixture's file is committed
// back and the environment converged again.
func (f *statusFixture) breakPlatformConfig(ctx context.Context, t *testing.T, cfg, msg, want string) string {
	t.Helper()
	sha, err := f.gitRepo.Commit(ctx, "", map[string]string{"platform/config/config.yaml": cfg}, msg)
	if err != nil {
		t.Fatal(err)
	}
	badRev := f.gitRepo.Revision(sha)
	reconcileSources := func() {
		for _, src := range []string{"flux-system", "shared"} {
			requestReconcile(ctx, t, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: src}})
		}
	}
	t.Cleanup(func() {
		sha, err := f.gitRepo.Commit(ctx, "", map[string]string{"platform/config/config.yaml": readFixture(t, "platform/config/config.yaml")}, "platform-config: fixed")
		if err != nil {
			t.Fatal(err)
		}
		reconcileSources()
		if r := convergeCLI(t, append(f.env, "--timeout", "4m")...); r.code != 0 {
			t.Errorf("restore: converge after the fix:\n%s", r)
		}
		f.rev = f.gitRepo.Revision(sha)
	})
	reconcileSources()
	// platform-config's dependencies are revision-gated on the new commit:
	// left to kustomize-controller's --requeue-dependency it fails only
	// after one 30 s wait per tier (90 s here). converge asks it the moment
	// they are applied, and fails closed on it.
	if r := convergeCLI(t, append(f.env, "--fail-after", "2s", "--timeout", "3m")...); r.code != 1 || !strings.HasPrefix(r.report.check(nodeGate("platform-config")), "fail") {
		t.Errorf("converge on the broken commit: want exit 1 failing platform-config:\n%s", r)
	}
	waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, "platform-config", func(k *kustomizev1.Kustomization) (bool, string) {
		st, reason, msg, _ := readyStatus(k.Generation, k.Status.Conditions)
		return st == metav1.ConditionFalse && k.Status.LastAttemptedRevision == badRev && strings.Contains(msg, want),
			fmt.Sprintf("Ready=%s %s %q attempted %s", st, reason, msg, k.Status.LastAttemptedRevision)
	})
	return badRev
}

// up establishes the fixture's state from ensureFlux, on a repository of
// its own (a new one each time: its history starts at the fixture).
func (f *statusFixture) up(t *testing.T) {
	ctx := timeoutCtx(t, 10*time.Minute)
	ensureFlux(t)
	suite.waitRunning(ctx, t, "kustomize-controller")
	suite.waitRunning(ctx, t, "source-controller")
	key, enc := sopsFixtureSecret(t, "status-s3cr3t")
	if f.gitRepo != nil {
		_ = f.gitRepo.Close()
	}
	name := freshRepoName("status")
	url := suite.git.URL + "/" + name + ".git"
	repoDir := copyDirTo(t, filepath.Join(f.dir, name), filepath.Join(suite.root, "testdata", "homelab"), map[string]string{
		"clusters/dev/source.yaml":      sourcePatch(url),
		"apps/secrets/secret.sops.yaml": enc,
	})
	gitRepo, sha, err := suite.git.CreateRepo(ctx, name, repoDir)
	if err != nil {
		t.Fatal(err)
	}
	*f = statusFixture{dir: f.dir, key: key, url: url, repoDir: repoDir, gitRepo: gitRepo, rev: gitRepo.Revision(sha),
		env: []string{"--repo", repoDir, "--env", "dev"}}

	up := exec.Command(bootstrapCLI(t), append(append([]string{"up"}, f.env...), "--age-key-file", "-", "--timeout", "4m", "-o", "json", "--kubeconfig", suite.sb.KubeconfigPath)...)
	up.Stdin = strings.NewReader(key)
	code, _, stderr, upReport := runJSON(t, up)
	if code != 0 {
		t.Fatalf("up: exit %d\n%s\n%s", code, syncRun{code: code, report: upReport}, stderr)
	}
	for _, n := range convergeNodes {
		waitRevision(ctx, t, n, f.rev)
	}
}

// statusHealthy runs status and wants exit 0 with every check passing or
// warning.
func statusHealthy(t *testing.T, what string, args ...string) statusRun {
	t.Helper()
	r := statusCLI(t, args...)
	if r.code != 0 {
		t.Fatalf("%s: want exit 0:\n%s", what, r)
	}
	for _, c := range r.report.Checks {
		if c.Verdict != "pass" && c.Verdict != "warn" {
			t.Errorf("%s: %s %s: %s", what, c.Verdict, c.ID, c.Message)
		}
	}
	return r
}

func TestStatus(t *testing.T) {
	f := &statusFixture{dir: t.TempDir()}
	t.Cleanup(func() {
		if f.gitRepo != nil {
			_ = f.gitRepo.Close()
		}
	})
	st := newStages(stage{"up", f.up})
	// Each case: the state established (or left by the case before), then
	// the case's own context.
	begin := func(t *testing.T) context.Context {
		t.Helper()
		st.ensure(t, "up")
		return timeoutCtx(t, 10*time.Minute)
	}

	t.Run("HealthyAfterUp", func(t *testing.T) {
		begin(t)
		junit := filepath.Join(t.TempDir(), "status.xml")
		r := statusHealthy(t, "status --repo --env dev", append(f.env, "--junit", junit)...)
		for _, id := range []string{controllers.GateDrift.ID, controllers.GateFlagsLive.ID, controllers.GateRollout.ID, agekey.GateSecret.ID,
			status.GateTemporary.ID, status.GateSourceReady.ID, converge.GateGraph.ID} {
			if v := r.verdict(id); v != "pass" {
				t.Errorf("%s: %s, want pass", id, r.report.check(id))
			}
		}
		decrypts := 0
		for _, c := range r.report.Checks {
			if strings.HasPrefix(c.ID, agekey.GateDecrypt.ID+"/") && c.Verdict == "pass" {
				decrypts++
			}
		}
		if decrypts == 0 {
			t.Errorf("no age-key.decrypt/<file> gate passed:\n%s", r)
		}
		for _, n := range convergeNodes {
			if c := r.report.check(nodeGate(n)); !strings.HasPrefix(c, "pass") || !strings.Contains(c, f.rev) {
				t.Errorf("%s: %s, want pass at %s", n, c, f.rev)
			}
		}
		b, err := os.ReadFile(junit)
		var doc struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		}
		if err != nil || xml.Unmarshal(b, &doc) != nil || doc.Tests < len(convergeNodes) || doc.Failures != 0 {
			t.Errorf("--junit: %v %+v\n%s", err, doc, b)
		}
		t.Logf("healthy: exit 0 in %s, %s", r.duration.Round(time.Millisecond), r.facts["apiRequests"])

		// The cluster alone: the live graph, the controllers against the
		// version they run; no age-key phase.
		l := statusHealthy(t, "status (cluster only)")
		if !strings.Contains(l.report.check(converge.GateGraph.ID), "11 Kustomization(s)") || l.verdict(agekey.GateSecret.ID) != "missing" ||
			!strings.Contains(l.facts["controllers.live"], "kustomize-controller") {
			t.Errorf("cluster-only status: graph %s, age-key %s, live %q", l.report.check(converge.GateGraph.ID), l.report.check(agekey.GateSecret.ID), l.facts["controllers.live"])
		}
		t.Logf("cluster only: exit 0 in %s, %s", l.duration.Round(time.Millisecond), l.facts["apiRequests"])

		// The text report, as a person reads it.
		cmd := exec.Command(bootstrapCLI(t), append(append([]string{"status"}, f.env...), "--kubeconfig", suite.sb.KubeconfigPath)...)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "status: ") || !strings.Contains(string(out), "exit 0)") {
			t.Errorf("text report: %v\n%s", err, out)
		}
	})

	t.Run("StrictFlagRemoved", func(t *testing.T) {
		ctx := begin(t)
		d := suite.deployment(ctx, t, "kustomize-controller")
		ci := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == "manager" })
		idx := slices.IndexFunc(d.Spec.Template.Spec.Containers[ci].Args, func(a string) bool {
			return strings.HasPrefix(a, "--feature-gates=") && strings.Contains(a, runner.StrictGate)
		})
		if idx < 0 {
			t.Fatalf("precondition: the live kustomize-controller has no %s flag after up: %q", runner.StrictGate, d.Spec.Template.Spec.Containers[ci].Args)
		}
		patch := fmt.Sprintf(`[{"op":"remove","path":"/spec/template/spec/containers/%d/args/%d"}]`, ci, idx)
		if err := suite.client.Patch(ctx, d, client.RawPatch(types.JSONPatchType, []byte(patch))); err != nil {
			t.Fatal(err)
		}
		// Restored by the tool's own step 1, which must find the drift too.
		defer func() {
			r := bootstrapJSON(t, "controllers", "--timeout", "3m")
			if r.code != 0 || !slices.ContainsFunc(r.report.Objects, func(o struct {
				Object   string
				Action   string
				Restarts bool
			}) bool {
				return o.Object == "Deployment/flux-system/kustomize-controller" && o.Action == "configured"
			}) {
				t.Errorf("restore with `bootstrap controllers`:\n%s\n%s", r, r.stderr)
			}
			suite.waitRunning(ctx, t, "kustomize-controller")
		}()
		suite.waitRunning(ctx, t, "kustomize-controller")
		r := statusCLI(t, f.env...)
		drift := r.report.check(controllers.GateDrift.ID)
		if r.code != 1 || !strings.HasPrefix(drift, "fail") || !strings.Contains(drift, "configured Deployment/flux-system/kustomize-controller (pod template changes: restarts)") ||
			r.verdict(controllers.GateFlagsLive.ID) != "fail" {
			t.Fatalf("want exit 1 with the drift named:\n%s", r)
		}
		var ev string
		for _, c := range r.report.Checks {
			if c.ID == controllers.GateFlagsLive.ID {
				ev = strings.Join(c.Evidence, "\n")
			}
		}
		if !strings.Contains(ev, "StrictPostBuildSubstitutions=true") || !strings.Contains(ev, "kustomize-controller") {
			t.Errorf("flags-live does not show the rendered strict flag against the live args:\n%s", ev)
		}
		// Nothing else is blamed (the restarted controller may be
		// reconciling: a Kustomization may warn, not fail).
		for _, id := range []string{status.GateTemporary.ID, agekey.GateSecret.ID} {
			if v := r.verdict(id); v != "pass" {
				t.Errorf("%s: %s, want pass", id, r.report.check(id))
			}
		}
		for _, n := range convergeNodes {
			if v := r.verdict(nodeGate(n)); v != "pass" && v != "warn" {
				t.Errorf("%s: %s, want pass or warn", n, r.report.check(nodeGate(n)))
			}
		}
	})

	t.Run("UndefinedVariable", func(t *testing.T) {
		ctx := begin(t)
		cfg := readFixture(t, "platform/config/config.yaml") + "  owner: \"${undefinedOwner}\"\n"
		badRev := f.breakPlatformConfig(ctx, t, cfg, "platform-config: an undefined variable", "variable not set")
		r := statusCLI(t, f.env...)
		c := r.report.check(nodeGate("platform-config"))
		if r.code != 1 || !strings.HasPrefix(c, "fail") || !strings.Contains(c, "variable not set (strict mode)") || !strings.Contains(c, badRev) {
			t.Fatalf("want platform-config failing with the strict-mode message at %s:\n%s", badRev, r)
		}
		if c := r.report.check(nodeGate("apps-web")); !strings.HasPrefix(c, "warn") || !strings.Contains(c, "waits on flux-system/platform-config") {
			t.Errorf("apps-web: %s, want a warning naming platform-config as the root cause", c)
		}
		if v := r.verdict(controllers.GateDrift.ID); v != "pass" {
			t.Errorf("controllers.drift: %s (the strict flag was restored)", r.report.check(controllers.GateDrift.ID))
		}
		// The cluster alone tells the same.
		if l := statusCLI(t); l.code != 1 || !strings.HasPrefix(l.report.check(nodeGate("platform-config")), "fail") {
			t.Errorf("cluster-only status: want platform-config failing:\n%s", l)
		}
	})

	// The [type] rule of check, against the real kustomize-controller: a
	// quoted "${appReplicas}" (cluster-vars: "1") is written unquoted by
	// the build and substituted to the number 1, which a ConfigMap's data
	// refuses. The offline check says so before the commit; the controller
	// fails the Kustomization the same way after it.
	t.Run("QuotedNumber", func(t *testing.T) {
		ctx := begin(t)
		cfg := readFixture(t, "platform/config/config.yaml") + "  replicas: \"${appReplicas}\"\n"
		offline := copyDir(t, "../../testdata/homelab", map[string]string{"platform/config/config.yaml": cfg})
		res, err := check.Run(ctx, check.Options{Options: fluxrepo.Options{Repo: offline, Path: "clusters/dev"}, NoCompare: true})
		if err != nil {
			t.Fatal(err)
		}
		typed := false
		for _, fd := range res.Findings {
			typed = typed || (fd.Detector == check.TypeChange && fd.Gate == "check.substitution/flux-system/platform-config")
		}
		if !typed {
			t.Fatalf("offline check: no [type] finding on platform-config: %+v", res.Findings)
		}
		// Seen: "ConfigMap/homelab-platform/platform-config dry-run failed:
		// failed to create typed patch object (…): .data.replicas: expected
		// string, got &value.valueUnstructured{Value:1}".
		f.breakPlatformConfig(ctx, t, cfg, "platform-config: a quoted number", ".data.replicas: expected string")
		var k kustomizev1.Kustomization
		if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "platform-config"}, &k); err != nil {
			t.Fatal(err)
		}
		_, _, msg, _ := readyStatus(k.Generation, k.Status.Conditions)
		t.Logf("kustomize-controller: %s", msg)
	})

	t.Run("AgeKeyReplaced", func(t *testing.T) {
		ctx := begin(t)
		other, _, err := agekeytest.NewIdentity()
		if err != nil {
			t.Fatal(err)
		}
		setKey := func(k string) {
			ids, err := agekey.Parse([]byte(k), "test")
			if err != nil {
				t.Fatal(err)
			}
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: agekey.DefaultSecretName}}
			p, _ := json.Marshal(map[string]any{"data": map[string][]byte{agekey.DataKey: ids.SecretData()}})
			if err := suite.client.Patch(ctx, s, client.RawPatch(types.MergePatchType, p)); err != nil {
				t.Fatal(err)
			}
		}
		setKey(other)
		defer setKey(f.key)
		r := statusCLI(t, f.env...)
		var failed []string
		for _, c := range r.report.Checks {
			if strings.HasPrefix(c.ID, agekey.GateDecrypt.ID+"/") && c.Verdict == "fail" && strings.Contains(c.Message, "does not decrypt with this key") {
				failed = append(failed, c.ID)
			}
		}
		if r.code != 1 || len(failed) == 0 || !strings.Contains(strings.Join(failed, " "), "apps/secrets/secret.sops.yaml") {
			t.Fatalf("want age-key.decrypt/apps/secrets/secret.sops.yaml to fail, exit 1:\n%s", r)
		}
		if v := r.verdict(agekey.GateSecret.ID); v != "pass" {
			t.Errorf("age-key.secret: %s (the replacement parses)", r.report.check(agekey.GateSecret.ID))
		}
	})

	t.Run("SourceLeftTemporary", func(t *testing.T) {
		ctx := begin(t)
		// A mirror: the same history as the final repository, served at
		// another URL (what a bootstrap host's mirror is).
		mirror := f.gitRepo.Name + "-mirror"
		mirrorBare := filepath.Join(suite.git.Root, mirror+".git")
		if err := os.RemoveAll(mirrorBare); err != nil { // a mirror of an earlier run of this case
			t.Fatal(err)
		}
		if out, err := exec.CommandContext(ctx, "git", "clone", "--bare", "--quiet", filepath.Join(suite.git.Root, f.gitRepo.Name+".git"), mirrorBare).CombinedOutput(); err != nil {
			t.Fatalf("git clone --bare: %v\n%s", err, out)
		}
		mirrorURL := suite.git.URL + "/" + mirror + ".git"
		s := bootstrapJSON(t, append(append([]string{"sync"}, f.env...), "--source-url", mirrorURL, "--converge=false", "--timeout", "3m")...)
		if s.code != 0 {
			t.Fatalf("sync from the temporary source:\n%s\n%s", s, s.stderr)
		}
		defer func() {
			if c := bootstrapJSON(t, "cutover", "--timeout", "4m"); c.code != 0 {
				t.Errorf("restore: cutover:\n%s\n%s", c, c.stderr)
			}
		}()
		r := statusCLI(t, f.env...)
		c := r.report.check(status.GateTemporary.ID)
		if r.code != 1 || !strings.HasPrefix(c, "fail") || !strings.Contains(c, mirrorURL) || !strings.Contains(c, "bootstrap cutover") || !strings.Contains(c, f.url) {
			t.Fatalf("want sync.temporary-source to fail naming %s, the declared %s and cutover:\n%s", mirrorURL, f.url, r)
		}
		if l := statusCLI(t); l.code != 1 || !strings.Contains(l.report.check(status.GateTemporary.ID), mirrorURL) {
			t.Errorf("cluster-only status: want the temporary source named:\n%s", l)
		}
	})

	t.Run("Watch", func(t *testing.T) {
		ctx := begin(t)
		cmd := exec.CommandContext(ctx, bootstrapCLI(t), append(append([]string{"status", "--watch"}, f.env...), "-o", "json", "--kubeconfig", suite.sb.KubeconfigPath)...)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := false
		defer func() {
			if !exited {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
		}()
		type doc struct {
			ExitCode int
			Facts    map[string]string
			Checks   []struct{ ID, Verdict, Message string }
		}
		docs := make(chan doc, 100)
		go func() {
			defer close(docs)
			dec := json.NewDecoder(stdout)
			for {
				var d doc
				if err := dec.Decode(&d); err != nil {
					return
				}
				docs <- d
			}
		}()
		check := func(d doc, id string) string {
			for _, c := range d.Checks {
				if c.ID == id {
					return c.Verdict + ": " + c.Message
				}
			}
			return "missing"
		}
		// until waits for an evaluation that satisfies ok; seen lists every
		// evaluation read, for the failure message.
		var seen []string
		until := func(what string, within time.Duration, ok func(doc) bool) doc {
			t.Helper()
			deadline := time.After(within)
			for {
				select {
				case d, open := <-docs:
					if !open {
						t.Fatalf("--watch ended while waiting for %s; evaluations seen:\n%s\n%s", what, strings.Join(seen, "\n"), stderr.String())
					}
					seen = append(seen, fmt.Sprintf("#%s exit %d after %q: apps-web %s", d.Facts["watch.evaluation"], d.ExitCode, d.Facts["watch.change"], check(d, nodeGate("apps-web"))))
					if ok(d) {
						return d
					}
				case <-deadline:
					t.Fatalf("no evaluation with %s within %s; evaluations seen:\n%s", what, within, strings.Join(seen, "\n"))
				}
			}
		}
		first := until("the first evaluation", time.Minute, func(d doc) bool { return true })
		if first.ExitCode != 0 || first.Facts["watch.evaluation"] != "1" || first.Facts["watch.change"] != "" {
			t.Fatalf("first evaluation: exit %d, facts %v", first.ExitCode, first.Facts)
		}
		k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "apps-web"}}
		suspend := func(on bool) {
			p := `{"spec":{"suspend":true}}`
			if !on {
				p = `{"spec":{"suspend":null}}`
			}
			if err := suite.client.Patch(ctx, k, client.RawPatch(types.MergePatchType, []byte(p))); err != nil {
				t.Fatal(err)
			}
		}
		t0 := time.Now()
		suspend(true)
		resumed := false
		defer func() {
			if !resumed {
				suspend(false)
			}
		}()
		d := until("apps-web suspended (exit 1)", time.Minute, func(d doc) bool {
			return d.ExitCode == 1 && strings.Contains(check(d, nodeGate("apps-web")), "suspended")
		})
		if d.Facts["watch.change"] == "" {
			t.Errorf("the evaluation after the change does not name it: %v", d.Facts)
		}
		t.Logf("--watch: the suspension seen in %s (change %q)", time.Since(t0).Round(time.Millisecond), d.Facts["watch.change"])
		suspend(false)
		resumed = true
		until("apps-web resumed and converged (exit 0)", 2*time.Minute, func(d doc) bool {
			return d.ExitCode == 0 && strings.HasPrefix(check(d, nodeGate("apps-web")), "pass")
		})
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		select {
		case <-waited:
			exited = true
		case <-time.After(15 * time.Second):
			t.Fatalf("--watch did not stop on SIGINT:\n%s", stderr.String())
		}
		if c := cmd.ProcessState.ExitCode(); c != 0 && c != 130 {
			t.Errorf("--watch interrupted: exit %d, want 0 (the last evaluation) or 130 (interrupted mid-evaluation)\n%s", c, stderr.String())
		}
	})

	t.Run("HealthyAgain", func(t *testing.T) {
		begin(t)
		r := statusHealthy(t, "status after every restore", f.env...)
		t.Logf("healthy again: exit 0 in %s, %s", r.duration.Round(time.Millisecond), r.facts["apiRequests"])
	})
}
