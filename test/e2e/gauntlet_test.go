//go:build e2e

package e2e

// The gauntlet (issue #14): one lifecycle run on fresh sandboxes that writes
// an evidence page (report.md, junit.xml, timeline.svg). Each stage is one
// function with its own assertions, and its detail is built from what was
// read back. BREAK=<stage> breaks that stage's input on purpose: the page
// must then show that stage failing with the gate's own message. `make
// gauntlet` runs TestGauntlet; the e2e suite runs it too, plus
// TestGauntletBreaks (two BREAK variants, each stopping at its stage).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/cutover"
	"github.com/homelab-ops/bootstrap/internal/lock"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
	"github.com/homelab-ops/bootstrap/internal/sandbox/runner"
	"github.com/homelab-ops/bootstrap/internal/wait"
)

const (
	gauntletFlux   = "v2.9.5"
	gauntletUpFrom = "v2.4.0"
	strictFlag     = "--feature-gates=StrictPostBuildSubstitutions=true"
	imageExtras    = "image-reflector-controller,image-automation-controller"
)

// gauntletStages is the order of the run; the key is BREAK's value.
var gauntletStages = []struct{ key, title string }{
	{"bringup", "Cold prod bring-up, this machine the temporary source (up --serve, v2.9.5 + image extras + strict overlay)"},
	{"noop", "No-op re-run"},
	{"drift", "Drift: strict flag removed from the live kustomize-controller"},
	{"upgrade", "Upgrade v2.4.0 → v2.9.5 with --migrate-crds"},
	{"rotate", "Age key rotation"},
	{"cutover", "Cutover to the final Git server (and a rollback from an unreachable one)"},
	{"faults", "Faults: controller killed during a wait, two concurrent runs, API server restarted mid-up"},
	{"hazard", "Held-back hazard: undefined ${VAR}"},
	{"oracle", "Oracle: the stock path (kubectl) on a second sandbox"},
	{"incident", "The seed incident replayed: a CNI knob lost from cluster-vars, gate on then off (helm-controller, a chart registry)"},
}

type gauntletOptions struct {
	Break string
	Out   string
	// StopAfterBreak ends the run after the broken stage (the cheap BREAK test).
	StopAfterBreak bool
}

// gauntlet is the state the stages share.
type gauntlet struct {
	t    *testing.T
	opts gauntletOptions
	page *page
	tmp  string

	main              *gEnv
	final             *gitserver.Server
	finalURL, tempURL string // tempURL: what this machine serves (--serve)
	stateDir          string // --serve's state (BOOTSTRAP_STATE_DIR)
	work              string // a clone of the final server (origin and final), served by --serve
	key, keyFile      string // the age key the cluster holds
	rev               string // the revision every Kustomization should be at
	upStart           time.Time
	firstUpRequests   string
	baseUp            []string
}

func gauntletOpts() gauntletOptions {
	o := gauntletOptions{Break: os.Getenv("BREAK"), Out: os.Getenv("GAUNTLET_OUT")}
	if o.Out == "" {
		o.Out = filepath.Join(suite.root, "gauntlet")
	}
	return o
}

// TestGauntlet is `make gauntlet`: every stage, the page in $GAUNTLET_OUT
// (default ./gauntlet). It fails unless every stage passes — or, with
// BREAK=<stage>, unless that stage fails.
func TestGauntlet(t *testing.T) {
	o := gauntletOpts()
	p := runGauntlet(t, o)
	t.Logf("gauntlet page: %s\n%s", filepath.Join(o.Out, "report.md"), p.table())
	if o.Break == "" {
		if !p.allPass() {
			t.Fatalf("the gauntlet is not clear; see %s", filepath.Join(o.Out, "report.md"))
		}
		return
	}
	if s := p.stage(o.Break); s == nil || s.Verdict != "fail" {
		t.Fatalf("BREAK=%s: that stage did not fail", o.Break)
	}
}

// TestGauntletBreaks proves two stages can fail: each BREAK variant runs the
// gauntlet up to its stage, and the page shows that stage failing with the
// gate's own message, and not the clear line.
func TestGauntletBreaks(t *testing.T) {
	for _, c := range []struct{ stage, want string }{
		{"bringup", "encrypted to someone else"},
		{"noop", "Deployment/flux-system/kustomize-controller"},
	} {
		t.Run(c.stage, func(t *testing.T) {
			out := t.TempDir()
			p := runGauntlet(t, gauntletOptions{Break: c.stage, Out: out, StopAfterBreak: true})
			b, err := os.ReadFile(filepath.Join(out, "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			s := p.stage(c.stage)
			row := ""
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "| "+mdCell(s.Title)+" |") {
					row = l
				}
			}
			if s.Verdict != "fail" || !strings.Contains(row, "| FAIL |") || !strings.Contains(row, c.want) {
				t.Fatalf("BREAK=%s: want the page's row failing with %q, got %q\n%s", c.stage, c.want, row, b)
			}
			if strings.Contains(string(b), clearLine) {
				t.Fatalf("BREAK=%s: the page says clear", c.stage)
			}
			t.Logf("BREAK=%s: %s", c.stage, row)
		})
	}
}

func (p *page) stage(key string) *stageResult {
	for _, s := range p.Stages {
		if s.Key == key {
			return s
		}
	}
	return nil
}

// runGauntlet runs the stages in order and always writes the page.
func runGauntlet(t *testing.T, o gauntletOptions) *page {
	bootstrapCLI(t) // built once, before any stage's clock starts
	g := &gauntlet{t: t, opts: o, tmp: t.TempDir(), page: &page{Started: time.Now(), Break: o.Break}}
	for _, s := range gauntletStages {
		g.page.Stages = append(g.page.Stages, &stageResult{Key: s.key, Title: s.title, Verdict: "skip", Detail: "not run"})
	}
	if o.Break != "" && g.page.stage(o.Break) == nil {
		t.Fatalf("BREAK=%s: no such stage (stages: %s)", o.Break, stageKeys())
	}
	g.page.Notes = append(g.page.Notes,
		"Stage 1 brings prod up at "+gauntletFlux+", not "+gauntletUpFrom+": the sandbox's v1.9.5 controller binaries cannot run a "+gauntletUpFrom+" install's CRDs (README, Known limit), so a "+gauntletUpFrom+" sync could never converge here. The "+gauntletUpFrom+" install and its upgrade are stage 4, on a sandbox of their own.",
		"Convergence is proven twice: by the converge phase that ends `bootstrap up`/`sync`/`cutover` (the dependsOn walk with revision gating), and independently by the gauntlet reading every Kustomization back Ready at the source's revision (waitKustomizations, nudging with reconcile.fluxcd.io/requestedAt where it must wait instead of waiting out requeues).",
		"The fault \"final source unreachable at cutover (rollback)\" runs in stage 6, where a temporary source exists; the API server restart mid-`up` runs in stage 7 (once the root applied the new commit, so during converge's wait), on the sandbox's single kube-apiserver: a restart, not an HA failover.",
	)
	var failed string
	defer func() {
		// A t.Fatal inside a stage (a helper that could not even run the
		// CLI) still leaves a page.
		for _, s := range g.page.Stages {
			if s.Verdict == "running" {
				s.Verdict, s.Detail = "fail", "aborted: "+s.Detail+" (see the test log)"
			}
		}
		if g.main != nil && g.main.sb != nil && g.stateDir != "" {
			g.serve("stop")
		}
		g.main.stop()
		if g.final != nil {
			_ = g.final.Close()
		}
		if err := g.page.write(o.Out); err != nil {
			t.Errorf("write the page: %v", err)
		}
	}()
	fns := map[string]func(context.Context, *stageResult, bool) error{
		"bringup": g.stageBringUp, "noop": g.stageNoop, "drift": g.stageDrift, "upgrade": g.stageUpgrade,
		"rotate": g.stageRotate, "cutover": g.stageCutover, "faults": g.stageFaults, "hazard": g.stageHazard, "oracle": g.stageOracle,
		"incident": g.stageIncident,
	}
	for _, s := range g.page.Stages {
		if failed != "" {
			s.Detail = "not run: stage " + failed + " failed before it"
			continue
		}
		broken := o.Break == s.Key
		ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
		t0 := time.Now()
		s.Verdict, s.Detail = "running", "started"
		err := fns[s.Key](ctx, s, broken)
		cancel()
		s.Duration = time.Since(t0)
		if err != nil {
			s.Verdict, s.Detail = "fail", err.Error()
			failed = s.Key
		} else {
			s.Verdict = "pass"
		}
		t.Logf("stage %s: %s in %s: %s", s.Key, s.Verdict, s.Duration.Round(100*time.Millisecond), s.Detail)
		if broken && o.StopAfterBreak {
			failed = s.Key + " (BREAK)"
		}
	}
	return g.page
}

func stageKeys() string {
	var k []string
	for _, s := range gauntletStages {
		k = append(k, s.key)
	}
	return strings.Join(k, ", ")
}

// cli runs bootstrap with -o json against env, the age key (if any) on
// stdin.
func (g *gauntlet) cli(ctx context.Context, env *gEnv, stdin string, args ...string) cliRun {
	full := append(append([]string{}, args...), "-o", "json", "--kubeconfig", env.sb.KubeconfigPath)
	cmd := exec.CommandContext(ctx, bootstrapCLI(g.t), full...)
	cmd.Env = append(os.Environ(), "BOOTSTRAP_STATE_DIR="+g.stateDir)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	t0 := time.Now()
	r := cliRun{args: args}
	r.code, r.stdout, r.stderr, r.report = runJSON(g.t, cmd)
	r.wall = time.Since(t0)
	var f struct {
		Facts  map[string]string
		Phases []phaseSummary
	}
	_ = json.Unmarshal([]byte(r.stdout), &f)
	r.facts, r.phases = f.Facts, f.Phases
	return r
}

// serve runs `bootstrap serve VERB` (status, stop) and returns its exit code.
func (g *gauntlet) serve(verb string) int {
	cmd := exec.Command(bootstrapCLI(g.t), "serve", verb, "--kubeconfig", g.main.sb.KubeconfigPath)
	cmd.Env = append(os.Environ(), "BOOTSTRAP_STATE_DIR="+g.stateDir)
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode()
}

func (g *gauntlet) git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-c", "user.name=gauntlet", "-c", "user.email=gauntlet@example.invalid"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}

// commit writes files into the work clone, commits and pushes to remotes;
// it returns the revision as source-controller names it.
func (g *gauntlet) commit(msg string, files map[string]string, remotes ...string) (string, error) {
	for rel, content := range files {
		if err := os.WriteFile(filepath.Join(g.work, filepath.FromSlash(rel)), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	if _, err := g.git(g.work, "commit", "--quiet", "-am", msg); err != nil {
		return "", err
	}
	sha, err := g.git(g.work, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	for _, r := range remotes {
		if _, err := g.git(g.work, "push", "--quiet", r, "HEAD:main"); err != nil {
			return "", err
		}
	}
	return "main@sha1:" + sha, nil
}

func (g *gauntlet) readWork(rel string) string {
	b, _ := os.ReadFile(filepath.Join(g.work, filepath.FromSlash(rel)))
	return string(b)
}

// ---- stage 1 ----------------------------------------------------------

// stageBringUp: a fresh sandbox, the fixture on a final Git server (the
// in-cluster Gitea to come), then `bootstrap up --serve` of prod from a
// clone of it with the age key on stdin: this machine is the temporary
// source. BREAK: a key the files are not encrypted to.
func (g *gauntlet) stageBringUp(ctx context.Context, s *stageResult, broken bool) error {
	var err error
	if g.main, err = startGEnv(ctx, "main", filepath.Join(g.tmp, "main"), true); err != nil {
		return err
	}
	if g.final, err = gitserver.Start(filepath.Join(g.tmp, "git-final"), ""); err != nil {
		return err
	}
	var recipient string
	if g.key, recipient, err = agekeytest.NewIdentity(); err != nil {
		return err
	}
	enc, err := agekeytest.EncryptedSecret("homelab-secret", "gauntlet-s3cr3t", recipient)
	if err != nil {
		return err
	}
	g.finalURL = g.final.URL + "/homelab.git"
	fixture := copyDir(g.t, filepath.Join(suite.root, "testdata", "homelab"), map[string]string{
		"clusters/dev/source.yaml":      sourcePatch(g.finalURL),
		"clusters/prod/source.yaml":     sourcePatch(g.finalURL),
		"apps/secrets/secret.sops.yaml": enc,
	})
	repo, sha, err := g.final.CreateRepo(ctx, "homelab", fixture)
	if err != nil {
		return err
	}
	_ = repo.Close()
	g.rev = repo.Revision(sha)
	g.stateDir = filepath.Join(g.tmp, "state")
	g.work = filepath.Join(g.tmp, "work")
	if _, err := g.git("", "clone", "--quiet", g.finalURL, g.work); err != nil {
		return err
	}
	if _, err := g.git(g.work, "remote", "add", "final", g.finalURL); err != nil {
		return err
	}

	key := g.key
	if broken {
		if key, _, err = agekeytest.NewIdentity(); err != nil {
			return err
		}
	}
	g.baseUp = []string{"up", "--repo", g.work, "--env", "prod", "--flux-version", gauntletFlux, "--components-extra", imageExtras, "--age-key-file", "-", "--timeout", "3m"}
	g.upStart = time.Now()
	r := g.cli(ctx, g.main, key, append(g.baseUp, "--serve")...)
	g.tempURL = r.facts["serveURL"]
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap %s --serve` (age key on stdin): exit %d, verdict %s, changed %t, %s API requests, %s; served %s at %s (pid %s)",
		strings.Join(g.baseUp, " "), r.code, r.report.Verdict, r.report.Changed, r.requests(), r.wall.Round(100*time.Millisecond), r.facts["serveRevision"], g.tempURL, r.facts["servePID"]))
	if r.code != 0 {
		return fmt.Errorf("bootstrap up exit %d: %s", r.code, r.firstProblem())
	}
	if r.facts["serveRevision"] != g.rev {
		return fmt.Errorf("served %q, want the checkout's HEAD %s", r.facts["serveRevision"], g.rev)
	}
	g.firstUpRequests = r.requests()
	created, _ := r.changedObjects()
	ks, err := g.main.waitKustomizations(ctx, homelabKustomizations, g.rev)
	if err != nil {
		return err
	}
	for _, n := range homelabKustomizations {
		k := ks[n]
		end, ready := g.main.firstReady[n]
		if !ready {
			end = time.Now()
		}
		// Start: the object's creation (second resolution, as the API
		// server stores it); end: first seen Ready at the revision.
		g.page.Timeline = append(g.page.Timeline, bar{Name: n, Start: k.CreationTimestamp.Sub(g.upStart.Truncate(time.Second)), End: end.Sub(g.upStart), Ready: ready})
	}
	var gr sourcev1.GitRepository
	if err := g.main.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system"}, &gr); err != nil {
		return err
	}
	if gr.Spec.URL != g.tempURL || gr.Annotations[rootsync.AnnSource] != rootsync.SourceTemporary || gr.Annotations[rootsync.AnnDeclaredURL] != g.finalURL {
		return fmt.Errorf("GitRepository after up: url %s, annotations %v", gr.Spec.URL, gr.Annotations)
	}
	sec, err := g.main.cs.CoreV1().Secrets("default").Get(ctx, "homelab-secret", metav1.GetOptions{})
	if err != nil || string(sec.Data["value"]) != "gauntlet-s3cr3t" {
		return fmt.Errorf("the SOPS Secret was not decrypted by the controller: %v", err)
	}
	in, err := g.main.waitRunnerFor(ctx, "kustomize-controller")
	if err != nil {
		return err
	}
	if !hasArg(in.Args, strictFlag) {
		return fmt.Errorf("the running kustomize-controller lacks %s: %q", strictFlag, in.Args)
	}
	var phases []string
	for _, p := range r.phases {
		phases = append(phases, p.Name+" "+p.Verdict+" "+p.Duration)
	}
	s.Evidence = append(s.Evidence, "phases: "+strings.Join(phases, ", "),
		fmt.Sprintf("GitRepository url %s, annotations source=%s declared-url=%s", gr.Spec.URL, gr.Annotations[rootsync.AnnSource], gr.Annotations[rootsync.AnnDeclaredURL]),
		"running kustomize-controller args: "+strings.Join(in.Args, " "))
	s.Detail = fmt.Sprintf("up exit 0 in %s (%d objects applied, %s API requests); up's converge saw all %d Kustomizations converged, and the %d of the flux-system source are Ready at %s %s after up started; SOPS Secret decrypted; kustomize-controller running with %s; source temporary, served by this machine (%s)",
		r.wall.Round(100*time.Millisecond), len(created), r.requests(), len(ks), len(homelabKustomizations), shortRev(g.rev), time.Since(g.upStart).Round(100*time.Millisecond), strictFlag, g.tempURL)
	return nil
}

func shortRev(rev string) string {
	if i := strings.Index(rev, "sha1:"); i >= 0 && len(rev) > i+5+12 {
		return rev[:i+5+12]
	}
	return rev
}

// ---- stage 2 ----------------------------------------------------------

// stageNoop re-runs the same `up`: nothing changes, nothing restarts.
// BREAK: a different --log-level, a change the re-run must not call a no-op.
func (g *gauntlet) stageNoop(ctx context.Context, s *stageResult, broken bool) error {
	var d appsv1.Deployment
	if err := g.main.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "kustomize-controller"}, &d); err != nil {
		return err
	}
	gen, starts := d.Generation, g.main.runner.Status().Instances["kustomize-controller"].Starts
	// The same up without --serve: the served temporary source is kept
	// (a re-run with --serve would replace the server, a change).
	args := append([]string{}, g.baseUp...)
	if broken {
		args = append(args, "--log-level", "debug")
	}
	r := g.cli(ctx, g.main, g.key, args...)
	changed, restarts := r.changedObjects()
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap %s`: exit %d, changed %t, %s API requests (first run: %s), %s", strings.Join(args, " "), r.code, r.report.Changed, r.requests(), g.firstUpRequests, r.wall.Round(100*time.Millisecond)))
	if r.code != 0 {
		return fmt.Errorf("re-run exit %d: %s", r.code, r.firstProblem())
	}
	if r.report.Changed || len(changed) > 0 {
		return fmt.Errorf("re-run changed: true: %s; restarts: %s", strings.Join(changed, ", "), strings.Join(restarts, ", "))
	}
	time.Sleep(time.Second) // a restart the runner would make is seen by now
	if err := g.main.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "kustomize-controller"}, &d); err != nil {
		return err
	}
	starts2 := g.main.runner.Status().Instances["kustomize-controller"].Starts
	if d.Generation != gen || starts2 != starts || len(restarts) > 0 {
		return fmt.Errorf("re-run restarted kustomize-controller: generation %d→%d, starts %d→%d", gen, d.Generation, starts, starts2)
	}
	s.Detail = fmt.Sprintf("changed: false, %d objects unchanged, 0 restarts (kustomize-controller generation %d, runner starts %d, both unchanged), %s API requests (first run %s), %s",
		len(r.report.Objects), gen, starts, r.requests(), g.firstUpRequests, r.wall.Round(100*time.Millisecond))
	return nil
}

// ---- stage 3 ----------------------------------------------------------

// stageDrift removes the strict flag from the live Deployment with a plain
// client; the dry-run plan names exactly that Deployment and its restart;
// the apply restores it, live and running. BREAK: the restore's overlay
// patch misses its target.
func (g *gauntlet) stageDrift(ctx context.Context, s *stageResult, broken bool) error {
	var d appsv1.Deployment
	if err := g.main.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "kustomize-controller"}, &d); err != nil {
		return err
	}
	c := &d.Spec.Template.Spec.Containers[0]
	var kept []string
	for _, a := range c.Args {
		if a != strictFlag {
			kept = append(kept, a)
		}
	}
	if len(kept) == len(c.Args) {
		return fmt.Errorf("precondition: live kustomize-controller has no %s: %q", strictFlag, c.Args)
	}
	c.Args = kept
	if err := g.main.client.Update(ctx, &d); err != nil {
		return err
	}
	in, err := g.main.waitRunnerFor(ctx, "kustomize-controller")
	if err != nil {
		return err
	}
	if hasArg(in.Args, strictFlag) {
		return fmt.Errorf("drift not live: the runner still runs %s", strictFlag)
	}
	s.Evidence = append(s.Evidence, fmt.Sprintf("drift: removed %s with a plain Update; the runner restarted kustomize-controller without it (start %d)", strictFlag, in.Starts))
	args := []string{"controllers", "--flux-version", gauntletFlux, "--components-extra", imageExtras, "--timeout", "2m"}
	if broken {
		dir := filepath.Join(g.tmp, "broken-overlay")
		_ = os.MkdirAll(dir, 0o755)
		shipped, err := os.ReadFile(filepath.Join(suite.root, "overlays", "strict-substitution.yaml"))
		if err != nil {
			return err
		}
		_ = os.WriteFile(filepath.Join(dir, "strict-substitution.yaml"), shipped, 0o644)
		_ = os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("patches:\n  - path: strict-substitution.yaml\n    target: {kind: Deployment, name: kustomize-controler}\n"), 0o644)
		args = append(args, "--overlays", dir)
	}
	plan := g.cli(ctx, g.main, "", append(args, "--dry-run")...)
	changed, restarts := plan.changedObjects()
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap %s --dry-run`: exit %d, plan %v, restarts %v", strings.Join(args, " "), plan.code, changed, restarts))
	if plan.code != 0 {
		return fmt.Errorf("dry run exit %d: %s", plan.code, plan.firstProblem())
	}
	want := "Deployment/flux-system/kustomize-controller"
	if len(changed) != 1 || !strings.HasSuffix(changed[0], want) || len(restarts) != 1 || restarts[0] != want {
		return fmt.Errorf("the plan does not name exactly the drift: changed %v, restarts %v", changed, restarts)
	}
	apply := g.cli(ctx, g.main, "", args...)
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap %s`: exit %d, changed %t, controllers.flags-live %s", strings.Join(args, " "), apply.code, apply.report.Changed, apply.report.check("controllers.flags-live")))
	if apply.code != 0 {
		return fmt.Errorf("apply exit %d: %s", apply.code, apply.firstProblem())
	}
	in2, err := g.main.waitRunnerFor(ctx, "kustomize-controller")
	if err != nil {
		return err
	}
	if !hasArg(in2.Args, strictFlag) || in2.Starts <= in.Starts {
		return fmt.Errorf("not restored live: starts %d→%d, args %q", in.Starts, in2.Starts, in2.Args)
	}
	s.Detail = fmt.Sprintf("plan named exactly %q (%s, restarts); apply restored %s: live Deployment and the running controller (start %d→%d, Ready) carry it; %s API requests",
		want, strings.Fields(changed[0])[0], strictFlag, in.Starts, in2.Starts, apply.requests())
	return nil
}

// ---- stage 4 ----------------------------------------------------------

// stageUpgrade installs v2.4.0 on a sandbox of its own (the known limit:
// the v1.9.5 binaries cannot run it, so no runner), stores an OCIRepository
// in v1beta2 (a version v2.9.5 drops), proves the upgrade without
// --migrate-crds stops, and with it passes, the object readable as v1.
// BREAK: no --migrate-crds.
func (g *gauntlet) stageUpgrade(ctx context.Context, s *stageResult, broken bool) error {
	up, err := startGEnv(ctx, "upgrade", filepath.Join(g.tmp, "upgrade"), false)
	if err != nil {
		return err
	}
	defer up.stop()
	base := []string{"controllers", "--components-extra", imageExtras, "--timeout", "2m"}
	r := g.cli(ctx, up, "", append(base, "--flux-version", gauntletUpFrom)...)
	if r.code != 0 {
		return fmt.Errorf("install %s exit %d: %s", gauntletUpFrom, r.code, r.firstProblem())
	}
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap controllers --flux-version %s`: exit 0, %d objects, strict: %s", gauntletUpFrom, len(r.report.Objects), r.report.check("controllers.strict-substitution")))
	oci := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1beta2", "kind": "OCIRepository",
		"metadata": map[string]any{"name": "gauntlet-oci", "namespace": fluxNS},
		"spec":     map[string]any{"url": "oci://127.0.0.1:1/none", "interval": "10m", "ref": map[string]any{"tag": "latest"}, "suspend": true},
	}}
	if err := up.client.Create(ctx, oci); err != nil {
		return err
	}
	if !broken {
		stop := g.cli(ctx, up, "", append(base, "--flux-version", gauntletFlux)...)
		c := stop.report.check("controllers.crd-stored-versions")
		s.Evidence = append(s.Evidence, fmt.Sprintf("without --migrate-crds: exit %d, %s", stop.code, c))
		if stop.code != 1 || !strings.HasPrefix(c, "fail") || len(stop.report.Objects) != 0 {
			return fmt.Errorf("an upgrade dropping a stored version did not stop before applying: exit %d, %s", stop.code, c)
		}
	}
	args := append(base, "--flux-version", gauntletFlux)
	if !broken {
		args = append(args, "--migrate-crds")
	}
	r = g.cli(ctx, up, "", args...)
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap %s`: exit %d, changed %t, %s", strings.Join(args, " "), r.code, r.report.Changed, r.report.check("controllers.strict-substitution")))
	if r.code != 0 {
		return fmt.Errorf("upgrade exit %d: %s", r.code, r.firstProblem())
	}
	oci.SetAPIVersion("source.toolkit.fluxcd.io/v1")
	if err := up.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "gauntlet-oci"}, oci); err != nil {
		return fmt.Errorf("the OCIRepository stored in v1beta2 is not readable as v1 after the upgrade: %v", err)
	}
	crd := &unstructured.Unstructured{}
	crd.SetAPIVersion("apiextensions.k8s.io/v1")
	crd.SetKind("CustomResourceDefinition")
	if err := up.client.Get(ctx, client.ObjectKey{Name: "ocirepositories.source.toolkit.fluxcd.io"}, crd); err != nil {
		return err
	}
	stored, _, _ := unstructured.NestedStringSlice(crd.Object, "status", "storedVersions")
	var d appsv1.Deployment
	if err := up.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "kustomize-controller"}, &d); err != nil {
		return err
	}
	image := d.Spec.Template.Spec.Containers[0].Image
	url, _, _ := unstructured.NestedString(oci.Object, "spec", "url")
	s.Detail = fmt.Sprintf("%s (%d objects) → %s with --migrate-crds: OCIRepository gauntlet-oci stored in v1beta2 read back as v1 (url %s); ocirepositories storedVersions %v; kustomize-controller image %s; without the flag the upgrade stopped before applying",
		gauntletUpFrom, len(r.report.Objects), gauntletFlux, url, stored, image)
	return nil
}

// ---- stage 5 ----------------------------------------------------------

// stageRotate re-encrypts the SOPS file to a new key in a commit, proves
// the plain install refuses a different key without --rotate, rotates with
// it (the before-gates decrypt every file with the new key), and proves the
// controller decrypts the new commit. BREAK: rotate to a key the files are
// not encrypted to.
func (g *gauntlet) stageRotate(ctx context.Context, s *stageResult, broken bool) error {
	key2, rec2, err := agekeytest.NewIdentity()
	if err != nil {
		return err
	}
	enc, err := agekeytest.EncryptedSecret("homelab-secret", "rotated-s3cr3t", rec2)
	if err != nil {
		return err
	}
	rev, err := g.commit("secrets: re-encrypt to the new age key", map[string]string{"apps/secrets/secret.sops.yaml": enc}, "final")
	if err != nil {
		return err
	}
	args := []string{"age-key", "--repo", g.work, "--env", "prod", "--age-key-file", "-"}
	refused := g.cli(ctx, g.main, key2, args...)
	s.Evidence = append(s.Evidence, fmt.Sprintf("without --rotate: exit %d, %s", refused.code, refused.firstProblem()))
	if refused.code == 0 {
		return fmt.Errorf("a different key was installed without --rotate")
	}
	use := key2
	if broken {
		if use, _, err = agekeytest.NewIdentity(); err != nil {
			return err
		}
	}
	r := g.cli(ctx, g.main, use, append(args, "--rotate")...)
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap %s --rotate`: exit %d, changed %t", strings.Join(args, " "), r.code, r.report.Changed))
	for _, c := range r.report.Checks {
		s.Evidence = append(s.Evidence, fmt.Sprintf("  %s %s: %s", c.Verdict, c.ID, c.Message))
	}
	if r.code != 0 {
		return fmt.Errorf("rotation exit %d: %s", r.code, r.firstProblem())
	}
	g.key = key2
	// The commit reaches the cluster when this machine serves it: a sync
	// with --serve replaces the server with one serving the new HEAD.
	sv := g.cli(ctx, g.main, "", "sync", "--repo", g.work, "--env", "prod", "--serve", "--timeout", "3m")
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap sync --serve` of the new commit: exit %d, served %s at %s", sv.code, sv.facts["serveRevision"], sv.facts["serveURL"]))
	if sv.code != 0 {
		return fmt.Errorf("sync --serve of the rotated commit exit %d: %s", sv.code, sv.firstProblem())
	}
	g.tempURL = sv.facts["serveURL"]
	if _, err := g.main.waitKustomizations(ctx, homelabKustomizations, rev); err != nil {
		return err
	}
	g.rev = rev
	sec, err := g.main.cs.CoreV1().Secrets("default").Get(ctx, "homelab-secret", metav1.GetOptions{})
	if err != nil || string(sec.Data["value"]) != "rotated-s3cr3t" {
		return fmt.Errorf("after the rotation the controller did not decrypt the new commit: %v %q", err, sec.Data["value"])
	}
	v := g.cli(ctx, g.main, "", "age-key", "verify", "--repo", g.work, "--env", "prod")
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap age-key verify`: exit %d, verdict %s", v.code, v.report.Verdict))
	if v.code != 0 {
		return fmt.Errorf("age-key verify after rotation exit %d: %s", v.code, v.firstProblem())
	}
	s.Detail = fmt.Sprintf("commit %s re-encrypted to a new key; without --rotate refused (exit %d); --rotate proved the key on the files before and after (%d checks pass), changed %t; apps-secrets Ready at %s and the Secret holds the new value; verify exit 0",
		shortRev(rev), refused.code, countVerdict(r, "pass"), r.report.Changed, shortRev(rev))
	return nil
}

func countVerdict(r cliRun, v string) int {
	n := 0
	for _, c := range r.report.Checks {
		if c.Verdict == v {
			n++
		}
	}
	return n
}

// ---- stage 6 ----------------------------------------------------------

// stageCutover: first to an unreachable URL (rolls back, the stage-7 fault
// that needs the temporary source), then to the final server; the serving
// process stops by itself and a commit through the final one reaches every
// Kustomization. BREAK: the final source is unreachable.
func (g *gauntlet) stageCutover(ctx context.Context, s *stageResult, broken bool) error {
	rb := g.cli(ctx, g.main, "", "cutover", "--to", "http://127.0.0.1:1/homelab.git", "--timeout", "10s")
	s.Evidence = append(s.Evidence, fmt.Sprintf("fault: cutover to an unreachable URL: exit %d, %s; %s", rb.code, rb.report.check(cutover.GateFinalReady.ID), rb.report.check(cutover.GateRollback.ID)))
	if rb.code != 1 || !strings.HasPrefix(rb.report.check(cutover.GateRollback.ID), "pass") {
		return fmt.Errorf("cutover to an unreachable source did not roll back: exit %d, %s", rb.code, rb.report.check(cutover.GateRollback.ID))
	}
	var gr sourcev1.GitRepository
	if err := g.main.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system"}, &gr); err != nil {
		return err
	}
	if gr.Spec.URL != g.tempURL {
		return fmt.Errorf("after the rollback the source is %s, not the temporary %s", gr.Spec.URL, g.tempURL)
	}
	args := []string{"cutover", "--timeout", "3m"}
	if broken {
		args = []string{"cutover", "--to", "http://127.0.0.1:1/final.git", "--timeout", "10s"}
	}
	r := g.cli(ctx, g.main, "", args...)
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap %s`: exit %d, %s; %s; %s", strings.Join(args, " "), r.code,
		r.report.check(cutover.GateFinalRevision.ID), r.report.check(cutover.GateHandedBack.ID), r.report.check(cutover.GateConsumersReady.ID)))
	if r.code != 0 {
		return fmt.Errorf("cutover exit %d: %s", r.code, r.firstProblem())
	}
	if err := g.main.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system"}, &gr); err != nil {
		return err
	}
	for k := range gr.Annotations {
		if strings.HasPrefix(k, rootsync.AnnotationPrefix) {
			return fmt.Errorf("annotation %s left after cutover", k)
		}
	}
	if gr.Spec.URL != g.finalURL {
		return fmt.Errorf("url %s after cutover, want %s", gr.Spec.URL, g.finalURL)
	}
	// The serving process watches the GitRepository: it has seen the
	// final URL and stopped by itself.
	stopped := false
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		if g.serve("status") == 1 {
			stopped = true
			break
		}
	}
	if !stopped {
		return fmt.Errorf("the serving process still runs after the cutover")
	}
	rev, err := g.commit("web: wave 3, through the final server", map[string]string{
		"apps/web/web.yaml": strings.Replace(g.readWork("apps/web/web.yaml"), "\ndata:\n", "\ndata:\n  wave: \"3\"\n", 1)}, "final")
	if err != nil {
		return err
	}
	t0 := time.Now()
	if _, err := g.main.waitKustomizations(ctx, homelabKustomizations, rev); err != nil {
		return err
	}
	g.rev = rev
	cm, err := g.main.cs.CoreV1().ConfigMaps("homelab-apps").Get(ctx, "web", metav1.GetOptions{})
	if err != nil || cm.Data["wave"] != "3" {
		return fmt.Errorf("web ConfigMap after a commit through the final server: %v %v", err, cm.Data)
	}
	s.Detail = fmt.Sprintf("unreachable URL rolled back to the temporary source (exit 1, rollback pass); cutover to %s exit 0, annotations handed back; the serving process stopped by itself; commit %s reached all %d Kustomizations (Ready at that revision) in %s",
		g.finalURL, shortRev(rev), len(homelabKustomizations), time.Since(t0).Round(100*time.Millisecond))
	return nil
}

// ---- stage 7 ----------------------------------------------------------

// stageFaults: kustomize-controller SIGKILLed while `bootstrap sync` waits
// (the runner restarts it, a re-run converges), and two concurrent runs
// (the second refused by the cluster lock, naming the holder). BREAK: the
// second run is given --break-lock.
func (g *gauntlet) stageFaults(ctx context.Context, s *stageResult, broken bool) error {
	rev, err := g.commit("web: wave 4", map[string]string{
		"apps/web/web.yaml": strings.Replace(g.readWork("apps/web/web.yaml"), "wave: \"3\"", "wave: \"4\"", 1)}, "final")
	if err != nil {
		return err
	}
	before := g.main.runner.Status().Instances["kustomize-controller"]
	g.main.nudgeSource(ctx, rev)
	syncArgs := []string{"sync", "--repo", g.work, "--env", "prod", "--timeout", "2m"}
	done := make(chan cliRun, 1)
	go func() {
		full := append(append([]string{}, syncArgs...), "-o", "json", "--kubeconfig", g.main.sb.KubeconfigPath)
		cmd := exec.CommandContext(ctx, bootstrapCLI(g.t), full...)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		_ = cmd.Run()
		r := cliRun{args: syncArgs, code: cmd.ProcessState.ExitCode(), stdout: o.String(), stderr: e.String()}
		_ = json.Unmarshal(o.Bytes(), &r.report)
		done <- r
	}()
	// Kill while sync runs (its static phase, apply and wait take > 1 s).
	time.Sleep(400 * time.Millisecond)
	killedAt := time.Now()
	var first cliRun
	select {
	case first = <-done:
		return fmt.Errorf("sync ended (exit %d) before the kill: no wait to interrupt", first.code)
	default:
	}
	if err := syscall.Kill(before.Pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("kill kustomize-controller pid %d: %v", before.Pid, err)
	}
	first = <-done
	s.Evidence = append(s.Evidence, fmt.Sprintf("kustomize-controller (pid %d) SIGKILLed 0.4 s into `bootstrap %s`, which ended %s later: exit %d, %s", before.Pid, strings.Join(syncArgs, " "), time.Since(killedAt).Round(100*time.Millisecond), first.code, first.firstProblem()))
	var after cliRun
	if first.code != 0 {
		after = g.cli(ctx, g.main, "", syncArgs...)
		s.Evidence = append(s.Evidence, fmt.Sprintf("re-run: exit %d", after.code))
		if after.code != 0 {
			return fmt.Errorf("re-run after the kill exit %d: %s", after.code, after.firstProblem())
		}
	}
	if err := g.main.runner.WaitFor(ctx, func(st runner.Status) bool {
		in := st.Instances["kustomize-controller"]
		return in.Ready && in.Starts > before.Starts
	}); err != nil {
		return fmt.Errorf("the runner did not restart kustomize-controller: %v", err)
	}
	in := g.main.runner.Status().Instances["kustomize-controller"]
	if in.Starts <= before.Starts || in.Pid == before.Pid {
		return fmt.Errorf("the runner did not restart kustomize-controller: starts %d→%d", before.Starts, in.Starts)
	}
	if _, err := g.main.waitKustomizations(ctx, homelabKustomizations, rev); err != nil {
		return err
	}
	g.rev = rev
	killDetail := fmt.Sprintf("controller killed mid-sync: runner restarted it (pid %d→%d, starts %d→%d), sync exit %d%s, all %d Kustomizations Ready at %s",
		before.Pid, in.Pid, before.Starts, in.Starts, first.code, map[bool]string{true: "", false: fmt.Sprintf(" then re-run exit %d", after.code)}[first.code == 0], len(homelabKustomizations), shortRev(rev))

	// Two concurrent runs: B starts once A holds the lease. A has real work
	// (--log-level debug restarts every controller, so it holds the lock
	// through the rollouts), so B cannot arrive after A finished; a third
	// run puts the log level back.
	upArgs := append(append([]string{}, g.baseUp...), "--log-level", "debug", "-o", "json", "--kubeconfig", g.main.sb.KubeconfigPath)
	a := exec.CommandContext(ctx, bootstrapCLI(g.t), upArgs...)
	a.Stdin = strings.NewReader(g.key)
	var ao bytes.Buffer
	a.Stdout = &ao
	if err := a.Start(); err != nil {
		return err
	}
	holder := ""
	for holder == "" || !strings.Contains(holder, fmt.Sprintf(`"pid":%d`, a.Process.Pid)) {
		l, err := g.main.cs.CoordinationV1().Leases(fluxNS).Get(ctx, lock.Name, metav1.GetOptions{})
		if err == nil && l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if ctx.Err() != nil {
			_ = a.Process.Kill()
			return fmt.Errorf("run A never held the lock (holder %q)", holder)
		}
		time.Sleep(50 * time.Millisecond)
	}
	bArgs := append([]string{}, g.baseUp...)
	if broken {
		bArgs = append(bArgs, "--break-lock")
	}
	b := g.cli(ctx, g.main, g.key, bArgs...)
	_ = a.Wait()
	aCode := a.ProcessState.ExitCode()
	s.Evidence = append(s.Evidence, fmt.Sprintf("run A (pid %d) held %s; run B: exit %d, %s; run A exit %d", a.Process.Pid, holder, b.code, b.firstProblem(), aCode))
	if b.code != 1 || !strings.Contains(b.report.Error, fmt.Sprint(a.Process.Pid)) || !strings.Contains(b.report.Error, "--break-lock") {
		why := b.firstProblem()
		if b.code == 0 {
			why = "it ran: " + strings.Join(b.report.Warnings, "; ")
		}
		return fmt.Errorf("the second concurrent run was not refused naming the holder: exit %d, %s", b.code, why)
	}
	if aCode != 0 {
		return fmt.Errorf("run A exit %d: %s", aCode, ao.String())
	}
	back := g.cli(ctx, g.main, g.key, g.baseUp...)
	if back.code != 0 || !back.report.Changed {
		return fmt.Errorf("putting the log level back: exit %d, changed %t: %s", back.code, back.report.Changed, back.firstProblem())
	}
	in, err = g.main.waitRunnerFor(ctx, "kustomize-controller")
	if err != nil {
		return err
	}
	if !hasArg(in.Args, "--log-level=info") || !hasArg(in.Args, strictFlag) {
		return fmt.Errorf("after the third run kustomize-controller runs %q", in.Args)
	}
	s.Evidence = append(s.Evidence, fmt.Sprintf("third run (plain up): exit 0, changed %t; kustomize-controller back on --log-level=info", back.report.Changed))
	concurrentDetail := fmt.Sprintf("concurrent runs: A (up --log-level debug, restarting every controller) held the lock, B refused (exit 1: %q), A exit 0, then the log level put back", b.report.Error)
	restartDetail, err := g.faultAPIServerRestart(ctx, s)
	if err != nil {
		return err
	}
	s.Detail = killDetail + "; " + concurrentDetail + "; " + restartDetail
	return nil
}

// faultAPIServerRestart: a commit gives converge real work; `bootstrap up`
// runs, and once the root has applied the commit (sync's last gate: the run
// is in, or entering, its converge wait) kube-apiserver is restarted on the
// same port over the same etcd. The run must end by itself within its
// --timeout, exit 0 or exit 1 naming what failed (no panic, no other code);
// a re-run then exits 0 and every Kustomization is Ready at the commit. The
// controllers the runner runs, and the sandbox's own processes, live on.
func (g *gauntlet) faultAPIServerRestart(ctx context.Context, s *stageResult) (string, error) {
	rev, err := g.commit("web: wave 5", map[string]string{
		"apps/web/web.yaml": strings.Replace(g.readWork("apps/web/web.yaml"), "wave: \"4\"", "wave: \"5\"", 1)}, "final")
	if err != nil {
		return "", err
	}
	before := g.main.runner.Status().Instances
	const upTimeout = 2 * time.Minute
	args := append([]string{}, g.baseUp...)
	if i := slices.Index(args, "--timeout"); i >= 0 && i+1 < len(args) {
		args[i+1] = upTimeout.String()
	} else {
		args = append(args, "--timeout", upTimeout.String())
	}
	full := append(append([]string{}, args...), "-o", "json", "--kubeconfig", g.main.sb.KubeconfigPath)
	cmd := exec.CommandContext(ctx, bootstrapCLI(g.t), full...)
	cmd.Stdin = strings.NewReader(g.key)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return "", err
	}
	done := make(chan struct{})
	var endedAt time.Time
	go func() { _ = cmd.Wait(); endedAt = time.Now(); close(done) }()
	kill := func() { _ = cmd.Process.Kill(); <-done }

	// Until the root applied rev, while the run still runs.
	var rootAt time.Duration
	pending := 0
	for rootAt == 0 {
		select {
		case <-done:
			return "", fmt.Errorf("up ended (exit %d) before the root applied %s: no converge wait to interrupt: %s", cmd.ProcessState.ExitCode(), shortRev(rev), trunc(o.String()))
		case <-ctx.Done():
			kill()
			return "", fmt.Errorf("the root never applied %s while up ran", shortRev(rev))
		case <-time.After(50 * time.Millisecond):
		}
		var list kustomizev1.KustomizationList
		if err := g.main.client.List(ctx, &list, client.InNamespace(fluxNS)); err != nil {
			continue
		}
		pending = 0
		root := false
		for _, k := range list.Items {
			if !slices.Contains(homelabKustomizations, k.Name) {
				continue
			}
			if k.Status.LastAppliedRevision != rev {
				pending++
			} else if k.Name == "flux-system" {
				root = true
			}
		}
		if root {
			rootAt = time.Since(t0)
		}
	}
	down := time.Now()
	r, err := g.main.sb.Restart(ctx, "kube-apiserver")
	if err != nil {
		kill()
		return "", fmt.Errorf("restart the API server: %v", err)
	}
	restartedAt := time.Since(t0)
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap %s` (pid %d): the root applied %s at +%.1fs (%d of %d Kustomizations not at it yet); kube-apiserver restarted on %s (pid %d→%d, SIGTERM to exit %s, down %s, ready again at +%.1fs)",
		strings.Join(args, " "), cmd.Process.Pid, shortRev(rev), rootAt.Seconds(), pending, len(homelabKustomizations), g.main.sb.APIServerURL, r.OldPid, r.NewPid, r.Stopped.Round(10*time.Millisecond), r.Down.Round(10*time.Millisecond), restartedAt.Seconds()))
	select {
	case <-done:
	case <-time.After(upTimeout + 30*time.Second):
		kill()
		return "", fmt.Errorf("up hung: still running %s after the API server came back (its --timeout %s), killed; stderr: %s", upTimeout+30*time.Second, upTimeout, trunc(e.String()))
	}
	if endedAt.Before(down) {
		return "", fmt.Errorf("up ended (exit %d) before the API server went down: no wait was interrupted", cmd.ProcessState.ExitCode())
	}
	ended := time.Since(t0) - restartedAt
	run := cliRun{args: args, code: cmd.ProcessState.ExitCode(), stdout: o.String(), stderr: e.String()}
	jsonErr := json.Unmarshal(o.Bytes(), &run.report)
	var f struct{ Facts map[string]string }
	_ = json.Unmarshal(o.Bytes(), &f)
	run.facts = f.Facts
	s.Evidence = append(s.Evidence, fmt.Sprintf("that run ended %.1fs after the restart: exit %d, verdict %s, converge %s/%s in %s with %s nudge(s), %d warning(s)%s",
		ended.Seconds(), run.code, run.report.Verdict, run.facts["converge.converged"], run.facts["converge.nodes"], run.facts["converge.duration"], run.facts["converge.nudges"], len(run.report.Warnings), map[bool]string{true: "", false: ": " + run.firstProblem()}[run.code == 0]))
	for _, w := range run.report.Warnings {
		s.Evidence = append(s.Evidence, "warning: "+w)
	}
	switch {
	case strings.Contains(run.stderr, "panic:") || strings.Contains(run.stderr, "[running]:"):
		return "", fmt.Errorf("up panicked across the API server restart: %s", trunc(run.stderr))
	case jsonErr != nil:
		return "", fmt.Errorf("up across the API server restart (exit %d) wrote no JSON report: %v: %s %s", run.code, jsonErr, trunc(run.stdout), trunc(run.stderr))
	case run.report.ExitCode != run.code:
		return "", fmt.Errorf("up across the API server restart exit %d, but its report says %d", run.code, run.report.ExitCode)
	case run.code == 1 && !namesProblem(run.report):
		return "", fmt.Errorf("up across the API server restart exit 1 without an error or a failing gate in its report")
	case run.code != 0 && run.code != 1:
		return "", fmt.Errorf("up across the API server restart exit %d (want 0, or 1 naming the failure): %s", run.code, run.firstProblem())
	}
	again := g.cli(ctx, g.main, g.key, g.baseUp...)
	s.Evidence = append(s.Evidence, fmt.Sprintf("re-run: exit %d, changed %t, converge %s/%s", again.code, again.report.Changed, again.facts["converge.converged"], again.facts["converge.nodes"]))
	if again.code != 0 {
		return "", fmt.Errorf("re-run after the API server restart exit %d: %s", again.code, again.firstProblem())
	}
	if _, err := g.main.waitKustomizations(ctx, homelabKustomizations, rev); err != nil {
		return "", err
	}
	g.rev = rev
	var runs []string
	for _, name := range []string{"source-controller", "kustomize-controller"} {
		in, err := g.main.waitRunnerFor(ctx, name)
		if err != nil {
			return "", fmt.Errorf("after the API server restart: %v", err)
		}
		runs = append(runs, fmt.Sprintf("%s pid %d→%d (starts %d→%d)", name, before[name].Pid, in.Pid, before[name].Starts, in.Starts))
	}
	if err := g.main.sb.Check(); err != nil {
		return "", fmt.Errorf("a sandbox process died across the API server restart: %v", err)
	}
	s.Evidence = append(s.Evidence, "runner after the restart: "+strings.Join(runs, ", ")+" Ready; etcd, controller-manager, scheduler and kwok alive")
	first := "exit 0"
	if run.code != 0 {
		first = fmt.Sprintf("exit 1 (%s)", trunc(run.firstProblem()))
	}
	return fmt.Sprintf("API server restarted mid-up (root at %s, %d of %d Kustomizations still to apply it; down %.1fs): the run %s after %.1fs, re-run exit 0, all %d Ready at %s; runner kept %s",
		shortRev(rev), pending, len(homelabKustomizations), r.Down.Seconds(), first, ended.Seconds(), len(homelabKustomizations), shortRev(rev), strings.Join(runs, ", ")), nil
}

// namesProblem says whether a failed run's report names why: an error or a
// failing gate.
func namesProblem(r cliReport) bool {
	if r.Error != "" {
		return true
	}
	for _, c := range r.Checks {
		if c.Verdict == "fail" {
			return true
		}
	}
	return false
}

// ---- stage 8 ----------------------------------------------------------

// stageHazard commits an undefined ${VAR} into platform/config (substituted
// by platform-config): sync's static phase stops it naming file:line; forced
// with --check=false, strict mode fails platform-config at that revision;
// a revert converges again. BREAK: the variable is defined (no hazard, so
// check must not stop it — the stage fails).
func (g *gauntlet) stageHazard(ctx context.Context, s *stageResult, broken bool) error {
	cfg := g.readWork("platform/config/config.yaml")
	variable := "${HAZARD_UNDEFINED}"
	if broken {
		variable = "${domain}"
	}
	line := strings.Count(strings.TrimRight(cfg, "\n"), "\n") + 2
	hazard := strings.TrimRight(cfg, "\n") + "\n  hazard: \"" + variable + "\"\n"
	rev, err := g.commit("platform: the held-back hazard", map[string]string{"platform/config/config.yaml": hazard})
	if err != nil {
		return err
	}
	fileLine := fmt.Sprintf("platform/config/config.yaml:%d", line)
	syncArgs := []string{"sync", "--repo", g.work, "--env", "prod", "--timeout", "2m"}
	r := g.cli(ctx, g.main, "", syncArgs...)
	var finding string
	for _, c := range r.report.Checks {
		if c.Verdict == "fail" && strings.HasPrefix(c.ID, "check.substitution/") {
			finding = c.ID + ": " + c.Message + " " + strings.Join(c.Evidence, " ")
		}
	}
	s.Evidence = append(s.Evidence, fmt.Sprintf("`bootstrap %s` on the hazard commit: exit %d, %s", strings.Join(syncArgs, " "), r.code, r.firstProblem()))
	if r.code != 1 || !strings.Contains(finding, fileLine) {
		return fmt.Errorf("check did not stop the hazard naming %s: exit %d, %s", fileLine, r.code, r.report.check("check.substitution/flux-system/platform-config"))
	}
	if !strings.HasPrefix(r.report.check(rootsync.GateApplied.ID), "skip") && r.report.check(rootsync.GateApplied.ID) != "missing" {
		return fmt.Errorf("static failed but sync ran: %s", r.report.check(rootsync.GateApplied.ID))
	}
	if _, err := g.git(g.work, "push", "--quiet", "final", "HEAD:main"); err != nil {
		return err
	}
	// The source fetches the hazard commit (a nudge, as `flux reconcile
	// source git` does) so the forced sync meets it at once.
	g.main.nudgeSource(ctx, rev)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	_, err = wait.For(wctx, g.main.client, &sourcev1.GitRepositoryList{}, fluxNS, "flux-system", func(gr *sourcev1.GitRepository) (bool, string) {
		got := ""
		if gr.Status.Artifact != nil {
			got = gr.Status.Artifact.Revision
		}
		return got == rev, "artifact " + got
	})
	cancel()
	if err != nil {
		return fmt.Errorf("the source did not fetch the hazard commit %s: %v", rev, err)
	}
	// Forced through, the sync's converge phase catches it: platform-config
	// fails at this revision with the strict-mode message, its dependents
	// are reported blocked, and the run exits 1 long before its timeout.
	t0 := time.Now()
	forced := g.cli(ctx, g.main, "", append(syncArgs, "--check=false")...)
	node := forced.report.check("converge.node/flux-system/platform-config")
	s.Evidence = append(s.Evidence, fmt.Sprintf("forced with --check=false: exit %d in %s; %s", forced.code, time.Since(t0).Round(100*time.Millisecond), node))
	if forced.code != 1 || !strings.HasPrefix(node, "fail") || !strings.Contains(node, strictError) {
		return fmt.Errorf("forced sync: want converge to fail naming platform-config with %q; exit %d, %s", strictError, forced.code, forced.firstProblem())
	}
	// Revert: the cluster converges again.
	if _, err := g.git(g.work, "revert", "--no-edit", "HEAD"); err != nil {
		return err
	}
	if _, err := g.git(g.work, "push", "--quiet", "final", "HEAD:main"); err != nil {
		return err
	}
	sha, err := g.git(g.work, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	g.rev = "main@sha1:" + sha
	t0 = time.Now()
	if _, err := g.main.waitKustomizations(ctx, homelabKustomizations, g.rev); err != nil {
		return fmt.Errorf("after the revert: %v", err)
	}
	s.Evidence = append(s.Evidence, fmt.Sprintf("revert %s pushed: every Kustomization Ready at it %s later", shortRev(g.rev), time.Since(t0).Round(100*time.Millisecond)))
	s.Detail = fmt.Sprintf("sync stopped in phase static naming %s (exit 1, nothing applied); forced with --check=false: sync's converge phase failed platform-config at %s with %q; reverted, all %d Kustomizations Ready at %s",
		fileLine, shortRev(rev), strictError, len(homelabKustomizations), shortRev(g.rev))
	return nil
}

// ---- stage 9 ----------------------------------------------------------

// stageOracle does the shell script's steps with kubectl on a second fresh
// sandbox (the same render applied server-side, the Secret created with
// kubectl, `kubectl apply -k clusters/prod`, `kubectl wait`) and compares
// the spec of every Flux object and controller Deployment with the
// gauntlet's cluster. BREAK: the oracle renders --plain (no strict overlay),
// a difference the comparison must report.
func (g *gauntlet) stageOracle(ctx context.Context, s *stageResult, broken bool) error {
	o, err := startGEnv(ctx, "oracle", filepath.Join(g.tmp, "oracle"), true)
	if err != nil {
		return err
	}
	defer o.stop()
	renderArgs := []string{"render", "--flux-version", gauntletFlux, "--components-extra", imageExtras}
	if broken {
		renderArgs = append(renderArgs, "--plain")
	}
	out, err := exec.CommandContext(ctx, bootstrapCLI(g.t), renderArgs...).Output()
	if err != nil {
		return fmt.Errorf("bootstrap %s: %v", strings.Join(renderArgs, " "), err)
	}
	renderFile := filepath.Join(g.tmp, "oracle-render.yaml")
	if err := os.WriteFile(renderFile, out, 0o644); err != nil {
		return err
	}
	keyFile := filepath.Join(g.tmp, "oracle-age.agekey")
	if err := os.WriteFile(keyFile, []byte(g.key), 0o600); err != nil {
		return err
	}
	steps := [][]string{
		{"apply", "--server-side", "-f", renderFile},
		{"-n", fluxNS, "wait", "--for=condition=Available", "deployment", "--all", "--timeout=2m"},
		{"-n", fluxNS, "create", "secret", "generic", "sops-age", "--from-file=age.agekey=" + keyFile},
		{"apply", "-k", filepath.Join(g.work, "clusters", "prod")},
	}
	for _, st := range steps {
		if _, err := o.kubectl(ctx, "", st...); err != nil {
			return err
		}
		s.Evidence = append(s.Evidence, "oracle: kubectl "+strings.Join(st, " "))
	}
	// kubectl wait, with the gauntlet's nudges beside it (the stock path
	// would wait out the 30 s dependency requeues).
	wctx, wcancel := context.WithCancel(ctx)
	go func() { _, _ = o.waitKustomizations(wctx, homelabKustomizations, g.rev) }()
	go o.nudgeNotReady(wctx) // the ones of the other source too: kubectl waits for --all
	_, err = o.kubectl(ctx, "", "-n", fluxNS, "wait", "--for=condition=Ready", "kustomization", "--all", "--timeout=4m")
	wcancel()
	if err != nil {
		return err
	}
	s.Evidence = append(s.Evidence, "oracle: kubectl -n flux-system wait --for=condition=Ready kustomization --all")
	if _, err := o.waitKustomizations(ctx, homelabKustomizations, g.rev); err != nil {
		return fmt.Errorf("oracle: %v", err)
	}
	rows, unexplained, compared, err := compareClusters(ctx, g.main, o)
	if err != nil {
		return err
	}
	g.page.Oracle = rows
	s.Detail = fmt.Sprintf("stock path (kubectl apply --server-side of the same render, Secret by kubectl, apply -k clusters/prod, kubectl wait) converged at %s; %d objects compared (spec of every GitRepository, Kustomization and Deployment in flux-system): %d differences, %d unexplained",
		shortRev(g.rev), compared, len(rows), len(unexplained))
	if len(unexplained) > 0 {
		return fmt.Errorf("the stock path differs from bootstrap where it should not: %s", strings.Join(unexplained, "; "))
	}
	return nil
}

// explained are the differences bootstrap is meant to have.
var explained = map[string]string{
	"annotation reconcile.fluxcd.io/requestedAt":                  "the gauntlet's nudges (both clusters, at different times)",
	"annotation kubectl.kubernetes.io/last-applied-configuration": "client-side `kubectl apply -k` (stock path only)",
	"annotation deployment.kubernetes.io/revision":                "rollout count: the bootstrap cluster rolled its Deployments out again (the drift and its repair in stage 3, the log level changed and put back in stage 7)",
	"object Lease/flux-system/bootstrap-lock":                     "bootstrap's cluster lock (released, the Lease stays)",
}

// compareClusters compares spec, labels and annotations of the Flux
// objects and the controller Deployments of a (bootstrap) and b (stock).
func compareClusters(ctx context.Context, a, b *gEnv) (rows, unexplained []string, compared int, err error) {
	kinds := []struct {
		gv, kind string
	}{
		{"source.toolkit.fluxcd.io/v1", "GitRepository"},
		{"kustomize.toolkit.fluxcd.io/v1", "Kustomization"},
		{"apps/v1", "Deployment"},
		{"coordination.k8s.io/v1", "Lease"},
	}
	list := func(e *gEnv, gv, kind string) (map[string]unstructured.Unstructured, error) {
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(gv)
		l.SetKind(kind + "List")
		if err := e.client.List(ctx, l, client.InNamespace(fluxNS)); err != nil {
			return nil, err
		}
		m := map[string]unstructured.Unstructured{}
		for _, it := range l.Items {
			m[it.GetName()] = it
		}
		return m, nil
	}
	add := func(obj, field, av, bv, key string) {
		why, ok := explained[key]
		if !ok {
			why = "**unexplained**"
			unexplained = append(unexplained, obj+" "+field)
		}
		rows = append(rows, fmt.Sprintf("| %s | %s | %s | %s | %s |", obj, mdCell(field), mdCell(trunc(av)), mdCell(trunc(bv)), why))
	}
	for _, k := range kinds {
		am, err := list(a, k.gv, k.kind)
		if err != nil {
			return nil, nil, 0, err
		}
		bm, err := list(b, k.gv, k.kind)
		if err != nil {
			return nil, nil, 0, err
		}
		var names []string
		for n := range am {
			names = append(names, n)
		}
		for n := range bm {
			if _, ok := am[n]; !ok {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			obj := k.kind + "/" + fluxNS + "/" + n
			ao, aok := am[n]
			bo, bok := bm[n]
			if !aok || !bok {
				add(obj, "presence", fmt.Sprint(aok), fmt.Sprint(bok), "object "+k.kind+"/"+fluxNS+"/"+n)
				continue
			}
			if k.kind == "Lease" {
				continue
			}
			compared++
			for _, p := range specDiff(ao.Object["spec"], bo.Object["spec"], "spec") {
				av, bv := p[1], p[2]
				add(obj, p[0], av, bv, "spec")
			}
			for _, which := range []string{"labels", "annotations"} {
				am, _, _ := unstructured.NestedStringMap(ao.Object, "metadata", which)
				bm, _, _ := unstructured.NestedStringMap(bo.Object, "metadata", which)
				keys := map[string]bool{}
				for x := range am {
					keys[x] = true
				}
				for x := range bm {
					keys[x] = true
				}
				var ks []string
				for x := range keys {
					ks = append(ks, x)
				}
				sort.Strings(ks)
				for _, x := range ks {
					if am[x] != bm[x] {
						add(obj, which+"."+x, am[x], bm[x], strings.TrimSuffix(which, "s")+" "+x)
					}
				}
			}
		}
	}
	return rows, unexplained, compared, nil
}

// specDiff lists the leaf paths where a and b differ: [path, a, b].
func specDiff(a, b any, path string) [][3]string {
	if reflect.DeepEqual(a, b) {
		return nil
	}
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		var out [][3]string
		for _, k := range ks {
			out = append(out, specDiff(am[k], bm[k], path+"."+k)...)
		}
		return out
	}
	as, _ := json.Marshal(a)
	bs, _ := json.Marshal(b)
	return [][3]string{{path, string(as), string(bs)}}
}

func trunc(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}
