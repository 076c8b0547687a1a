//go:build e2e

package e2e

// Step 3 against the sandbox: `bootstrap sync` of the homelab fixture
// (testdata/homelab) for dev from the sandbox Git server, prod from a
// temporary source (a second Git server holding a mirror of the same
// repository), a commit through the temporary source, a cutover to an
// unreachable URL that rolls back, the cutover to the final server, and the
// before-gates refusing broken roots with nothing applied. The cases follow
// one another through syncFixture's stages; each establishes the stage it
// starts from, so any one runs alone (-run 'TestSync/Case').

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/cutover"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
)

// syncReport is the part of the JSON report these tests read.
type syncReport = cliReport

type syncRun struct {
	code           int
	stdout, stderr string
	report         syncReport
	// maxRSSMiB is the process's peak resident set (getrusage), for the
	// memory budgets the benchmarks report.
	maxRSSMiB float64
}

func (r syncRun) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "exit %d, changed %t, dryRun %t, error %q\n", r.code, r.report.Changed, r.report.DryRun, r.report.Error)
	for _, c := range r.report.Checks {
		fmt.Fprintf(&b, "  %s %s: %s\n", c.Verdict, c.ID, c.Message)
	}
	for _, o := range r.report.Objects {
		if o.Action != "unchanged" {
			fmt.Fprintf(&b, "  %s %s\n", o.Action, o.Object)
		}
	}
	return b.String()
}

// bootstrapJSON runs the CLI with -o json against the sandbox.
func bootstrapJSON(t testing.TB, args ...string) syncRun {
	t.Helper()
	return bootstrapJSONIn(t, "", args...)
}

// bootstrapJSONIn is bootstrapJSON with stdin (an age key for
// --age-key-file -); no output channel may hold key material.
func bootstrapJSONIn(t testing.TB, stdin string, args ...string) syncRun {
	t.Helper()
	full := append(append([]string{}, args...), "-o", "json", "--kubeconfig", suite.sb.KubeconfigPath)
	var r syncRun
	cmd := exec.Command(bootstrapCLI(t), full...)
	cmd.Stdin = strings.NewReader(stdin)
	r.code, r.stdout, r.stderr, r.report = runJSON(t, cmd)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.maxRSSMiB = float64(ru.Maxrss) / 1024 // KiB on Linux
	}
	if strings.Contains(strings.ToUpper(r.stdout+r.stderr), "AGE-SECRET-KEY-") {
		t.Errorf("bootstrap %s: the output holds age key material", strings.Join(args, " "))
	}
	return r
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// copyDir copies the fixture into a temporary directory of t and applies
// edits (path → content, "" deletes).
func copyDir(t *testing.T, src string, edits map[string]string) string {
	t.Helper()
	return copyDirTo(t, t.TempDir(), src, edits)
}

// copyDirTo is copyDir into dst, which must not exist yet or be empty.
func copyDirTo(t *testing.T, dst, src string, edits map[string]string) string {
	t.Helper()
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	for rel, content := range edits {
		p := filepath.Join(dst, filepath.FromSlash(rel))
		if content == "" {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func readFixture(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(suite.root, "testdata", "homelab", filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sourcePatch is an environment's source.yaml: both GitRepositories
// (flux-system and shared) at url; the sandbox serves one repository for both.
func sourcePatch(url string) string {
	return fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  url: %s\n", url) +
		fmt.Sprintf("---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: shared\n  namespace: flux-system\nspec:\n  url: %s\n", url)
}

func liveGitRepository(ctx context.Context, t *testing.T) (*sourcev1.GitRepository, bool) {
	t.Helper()
	var g sourcev1.GitRepository
	err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system"}, &g)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return &g, true
}

// waitRevision waits until the Kustomization is Ready having applied rev.
func waitRevision(ctx context.Context, t *testing.T, name, rev string) {
	t.Helper()
	waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, name, func(k *kustomizev1.Kustomization) (bool, string) {
		st, reason, msg, cur := readyStatus(k.Generation, k.Status.Conditions)
		return st == metav1.ConditionTrue && cur && k.Status.LastAppliedRevision == rev,
			fmt.Sprintf("Ready=%s %s %q lastApplied=%s (want %s)", st, reason, msg, k.Status.LastAppliedRevision, rev)
	})
}

var homelabKustomizations = []string{"flux-system", "cni", "platform", "platform-config", "apps-core", "apps-web", "apps-secrets"}

// syncFixture is what TestSync's stages share: the repository on the
// suite's Git server (final), the age key its SOPS Secret is encrypted to,
// and from stage prod-temporary on a temporary Git server holding a mirror
// and a work clone whose remotes are both.
type syncFixture struct {
	dir      string // lives as long as TestSync
	key      string
	repoDir  string
	gitRepo  *gitserver.Repo
	rev      string // the first commit's revision
	finalURL string
	dev      []string // sync --repo --env dev
	prod     []string // sync --repo --env prod

	temp    *gitserver.Server
	tempURL string
	work    string // a clone of the temporary server, with the final one as remote "final"
	pushed  string // the SHA of wave 2, committed through the temporary source
}

const syncSecretValue = "homelab-s3cr3t"

// The stages, in order; each case names the one it starts from.
const (
	stageClean    = "clean"          // ensureFlux's: no GitRepository, no age key; a new repository
	stageAgeKey   = "age-key"        // step 2 done: the sops-age Secret
	stageDev      = "dev"            // dev synced from the final server, every Kustomization Ready at rev
	stageProdTemp = "prod-temporary" // prod synced from the temporary source
	stagePushed   = "pushed"         // wave 2 committed through the temporary source, everything at it
	stageCutOver  = "cutover"        // cut over to the final server, the temporary one stopped, wave 3 everywhere
)

func (f *syncFixture) stages() *stages {
	return newStages(
		stage{stageClean, f.clean},
		stage{stageAgeKey, f.createAgeKey},
		stage{stageDev, func(t *testing.T) {
			if r := bootstrapJSON(t, f.dev...); r.code != 0 {
				t.Fatalf("sync dev:\n%s\n%s", r, r.stderr)
			}
			f.waitAll(t, f.rev)
		}},
		stage{stageProdTemp, func(t *testing.T) {
			f.startTemporary(t)
			if r := bootstrapJSON(t, append(f.prod, "--source-url", f.tempURL)...); r.code != 0 {
				t.Fatalf("sync prod from the temporary source:\n%s\n%s", r, r.stderr)
			}
		}},
		stage{stagePushed, func(t *testing.T) {
			f.pushed = f.commitWave(t, "2", "web: wave 2", "origin", "final")
			// As the case does: a plain re-run, whose converge nudges the
			// chain to the commit (no 30 s dependency requeues).
			if r := bootstrapJSON(t, f.prod...); r.code != 0 {
				t.Fatalf("re-run on the temporary source:\n%s\n%s", r, r.stderr)
			}
			f.waitAll(t, "main@sha1:"+f.pushed)
		}},
		stage{stageCutOver, func(t *testing.T) {
			if r := bootstrapJSON(t, "cutover", "--timeout", "4m"); r.code != 0 {
				t.Fatalf("cutover:\n%s\n%s", r, r.stderr)
			}
			f.stopTemporary(t)
			sha := f.commitWave(t, "3", "web: wave 3, after cutover", "final")
			if cv := bootstrapJSON(t, "converge", "--repo", f.repoDir, "--env", "prod", "--timeout", "3m"); cv.code != 0 {
				t.Fatalf("converge after the commit to the final server:\n%s\n%s", cv, cv.stderr)
			}
			f.waitAll(t, "main@sha1:"+sha)
		}},
	)
}

// clean is ensureFlux's state and a new repository: the fixture, each
// environment's source URL pointing at the suite's Git server, and a SOPS
// Secret encrypted to a key generated here.
func (f *syncFixture) clean(t *testing.T) {
	ctx := timeoutCtx(t, 5*time.Minute)
	ensureFlux(t)
	suite.waitRunning(ctx, t, "kustomize-controller")
	suite.waitRunning(ctx, t, "source-controller")
	if _, found := liveGitRepository(ctx, t); found {
		t.Fatal("precondition: GitRepository flux-system/flux-system already exists")
	}
	f.close()
	key, enc := sopsFixtureSecret(t, syncSecretValue)
	name := freshRepoName("homelab")
	finalURL := suite.git.URL + "/" + name + ".git"
	repoDir := copyDirTo(t, filepath.Join(f.dir, name), filepath.Join(suite.root, "testdata", "homelab"), map[string]string{
		"clusters/dev/source.yaml":      sourcePatch(finalURL),
		"clusters/prod/source.yaml":     sourcePatch(finalURL),
		"apps/secrets/secret.sops.yaml": enc,
	})
	gitRepo, sha, err := suite.git.CreateRepo(ctx, name, repoDir)
	if err != nil {
		t.Fatal(err)
	}
	*f = syncFixture{dir: f.dir, key: key, repoDir: repoDir, gitRepo: gitRepo, rev: gitRepo.Revision(sha), finalURL: finalURL,
		dev:  []string{"sync", "--repo", repoDir, "--env", "dev", "--timeout", "3m"},
		prod: []string{"sync", "--repo", repoDir, "--env", "prod", "--timeout", "3m"}}
}

// createAgeKey is step 2, done here directly: the Secret holding the key
// the fixture's Secret is encrypted to.
func (f *syncFixture) createAgeKey(t *testing.T) {
	ctx := timeoutCtx(t, time.Minute)
	ids, err := agekey.Parse([]byte(f.key), "test")
	if err != nil {
		t.Fatal(err)
	}
	if err := suite.client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: agekey.DefaultSecretName},
		Data: map[string][]byte{agekey.DataKey: ids.SecretData()}}); err != nil {
		t.Fatal(err)
	}
}

// startTemporary starts the temporary Git server, holding a mirror of the
// final repository (same commits), and a work clone of it whose remotes are
// both servers.
func (f *syncFixture) startTemporary(t *testing.T) {
	f.stopTemporary(t)
	root, work := filepath.Join(f.dir, f.gitRepo.Name+"-temp"), filepath.Join(f.dir, f.gitRepo.Name+"-work")
	for _, d := range []string{root, work} { // an earlier temporary source of this fixture
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	temp, err := gitserver.Start(root, "")
	if err != nil {
		t.Fatal(err)
	}
	f.temp = temp
	tempBare := filepath.Join(temp.Root, "homelab.git")
	git(t, "", "clone", "--quiet", "--bare", filepath.Join(suite.git.Root, f.gitRepo.Name+".git"), tempBare)
	git(t, tempBare, "config", "http.receivepack", "true")
	f.tempURL = temp.URL + "/homelab.git"
	f.work = work
	git(t, "", "clone", "--quiet", f.tempURL, f.work)
	git(t, f.work, "remote", "add", "final", f.finalURL)
}

// stopTemporary stops the temporary Git server; the work clone stays (its
// remote final is the final server).
func (f *syncFixture) stopTemporary(t *testing.T) {
	if f.temp == nil {
		return
	}
	if err := f.temp.Close(); err != nil {
		t.Fatal(err)
	}
	f.temp = nil
}

// close releases what the fixture holds.
func (f *syncFixture) close() {
	if f.temp != nil {
		_ = f.temp.Close()
		f.temp = nil
	}
	if f.gitRepo != nil {
		_ = f.gitRepo.Close()
	}
}

// commitWave commits web.yaml with data wave: N in the work clone, pushes
// it to remotes, asks the root's source to reconcile and waits for the root
// at it; it returns the SHA.
func (f *syncFixture) commitWave(t *testing.T, wave, msg string, remotes ...string) string {
	t.Helper()
	ctx := timeoutCtx(t, 5*time.Minute)
	if err := os.WriteFile(filepath.Join(f.work, "apps", "web", "web.yaml"), []byte(strings.Replace(readFixture(t, "apps/web/web.yaml"), "\ndata:\n", "\ndata:\n  wave: \""+wave+"\"\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, f.work, "commit", "--quiet", "-am", msg)
	sha := git(t, f.work, "rev-parse", "HEAD")
	for _, r := range remotes {
		git(t, f.work, "push", "--quiet", r, "HEAD:main")
	}
	requestReconcile(ctx, t, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "flux-system"}})
	waitRevision(ctx, t, "flux-system", "main@sha1:"+sha)
	return sha
}

// waitAll waits until every Kustomization of the fixture is Ready at rev.
func (f *syncFixture) waitAll(t *testing.T, rev string) {
	t.Helper()
	ctx := timeoutCtx(t, 5*time.Minute)
	for _, k := range homelabKustomizations {
		waitRevision(ctx, t, k, rev)
	}
}

func TestSync(t *testing.T) {
	f := &syncFixture{dir: t.TempDir()}
	t.Cleanup(f.close)
	st := f.stages()
	// begin establishes the stage a case starts from and gives the case
	// its context.
	begin := func(t *testing.T, stage string) context.Context {
		t.Helper()
		st.ensure(t, stage)
		return timeoutCtx(t, 10*time.Minute)
	}

	nothingApplied := func(ctx context.Context, t *testing.T, r syncRun) {
		t.Helper()
		if _, found := liveGitRepository(ctx, t); found {
			t.Fatalf("a before-gate failed but GitRepository flux-system was applied:\n%s", r)
		}
		if r.report.Changed || !strings.HasPrefix(r.report.check(rootsync.GateApplied.ID), "skip") && r.report.check(rootsync.GateApplied.ID) != "missing" {
			t.Fatalf("a before-gate failed but the run applied:\n%s", r)
		}
	}

	t.Run("MissingSopsAgeFailsBeforeGate", func(t *testing.T) {
		ctx := begin(t, stageClean)
		r := bootstrapJSON(t, f.dev...)
		c := r.report.check(rootsync.GateDecryption.ID + "/flux-system/sops-age")
		if r.code != 1 || !strings.HasPrefix(c, "fail") || !strings.Contains(c, "bootstrap age-key --path clusters/dev") {
			t.Fatalf("want the decryption gate to fail pointing at step 2:\n%s", r)
		}
		nothingApplied(ctx, t, r)
	})

	t.Run("RootWaitTrueFailsBeforeGate", func(t *testing.T) {
		ctx := begin(t, stageAgeKey)
		broken := copyDir(t, f.repoDir, map[string]string{"clusters/prod/sync.yaml": strings.Replace(readFixture(t, "clusters/prod/sync.yaml"), "  wait: false", "  wait: true", 1)})
		// The offline check (phase static) stops it first, naming the file…
		r := bootstrapJSON(t, "sync", "--repo", broken, "--env", "prod")
		if c := r.report.check("check.graph"); r.code != 1 || !strings.HasPrefix(c, "fail") || !strings.Contains(c, "clusters/prod/sync.yaml") ||
			!strings.HasPrefix(r.report.check(rootsync.GateRootWait.ID), "skip") {
			t.Fatalf("want the static check to fail naming the file, and sync not to run:\n%s", r)
		}
		nothingApplied(ctx, t, r)
		// …and with the check switched off, sync's own gate still does.
		r = bootstrapJSON(t, "sync", "--repo", broken, "--env", "prod", "--check=false")
		if c := r.report.check(rootsync.GateRootWait.ID); r.code != 1 || !strings.HasPrefix(c, "fail") || !strings.Contains(c, "clusters/prod/sync.yaml") {
			t.Fatalf("want the root-wait gate to fail naming the file:\n%s", r)
		}
		nothingApplied(ctx, t, r)
	})

	t.Run("ProdWithoutSyncYAMLFailsBeforeGate", func(t *testing.T) {
		ctx := begin(t, stageAgeKey)
		broken := copyDir(t, f.repoDir, map[string]string{
			"clusters/prod/sync.yaml":          "",
			"clusters/prod/kustomization.yaml": strings.Replace(readFixture(t, "clusters/prod/kustomization.yaml"), "  - sync.yaml\n", "", 1),
		})
		if r := bootstrapJSON(t, "sync", "--repo", broken, "--env", "prod"); r.code != 1 || !strings.Contains(r.report.check("check.graph"), "renders no root Kustomization") {
			t.Fatalf("want the static check to name the missing root:\n%s", r)
		}
		r := bootstrapJSON(t, "sync", "--repo", broken, "--env", "prod", "--check=false")
		c := r.report.check(rootsync.GateDependsOn.ID)
		if r.code != 1 || !strings.HasPrefix(c, "fail") || !strings.Contains(c, "depends on flux-system/flux-system") || !strings.HasPrefix(r.report.check(rootsync.GateRoot.ID), "fail") {
			t.Fatalf("want the dependsOn and root gates to fail:\n%s", r)
		}
		nothingApplied(ctx, t, r)
	})

	t.Run("DevDryRun", func(t *testing.T) {
		ctx := begin(t, stageAgeKey)
		r := bootstrapJSON(t, append(f.dev, "--dry-run")...)
		if r.code != 0 || !r.report.DryRun || !r.report.Changed {
			t.Fatalf("dry run:\n%s\n%s", r, r.stderr)
		}
		created := 0
		for _, o := range r.report.Objects {
			if o.Action == "created" {
				created++
			}
		}
		if created != len(r.report.Objects) || created < 14 {
			t.Errorf("dry run plan: %d of %d objects created, want all (2 GitRepositories, cluster-vars, 11 Kustomizations)", created, len(r.report.Objects))
		}
		if _, found := liveGitRepository(ctx, t); found {
			t.Fatal("--dry-run applied the GitRepository")
		}
	})

	t.Run("DevSyncFromSandboxGit", func(t *testing.T) {
		ctx := begin(t, stageAgeKey)
		t0 := time.Now()
		r := bootstrapJSON(t, f.dev...)
		if r.code != 0 || !r.report.Changed || !strings.HasPrefix(r.report.check(rootsync.GateSourceReady.ID), "pass") ||
			!strings.Contains(r.report.check(rootsync.GateRootApplied.ID), f.rev) {
			t.Fatalf("sync dev:\n%s\n%s", r, r.stderr)
		}
		t.Logf("sync dev: root Ready at %s in %s", f.rev, time.Since(t0).Round(time.Millisecond))
		// The chain behind the root converges from what sync applied,
		// including the SOPS Secret decrypted with the Secret from step 2.
		for _, k := range homelabKustomizations {
			waitRevision(ctx, t, k, f.rev)
		}
		s, err := suite.cs.CoreV1().Secrets("default").Get(ctx, "homelab-secret", metav1.GetOptions{})
		if err != nil || string(s.Data["value"]) != syncSecretValue {
			t.Fatalf("decrypted Secret: %v %q", err, s.Data["value"])
		}
		cm, err := suite.cs.CoreV1().ConfigMaps("homelab-platform").Get(ctx, "platform", metav1.GetOptions{})
		if err != nil || cm.Data["environment"] != "dev" || cm.Data["apiServer"] != "10.10.0.10" {
			t.Fatalf("substituted ConfigMap: %v %v", err, cm.Data)
		}
		t.Logf("dev: all %d Kustomizations Ready at %s in %s", len(homelabKustomizations), f.rev, time.Since(t0).Round(time.Millisecond))
		st.reached(t, stageDev)
	})

	t.Run("DevRerunUnchanged", func(t *testing.T) {
		begin(t, stageDev)
		r := bootstrapJSON(t, f.dev...)
		if r.code != 0 || r.report.Changed {
			t.Fatalf("re-run on a converged cluster should be changed: false:\n%s", r)
		}
	})

	// Production: a temporary Git server holding a mirror of the same
	// repository (same commits), the final one being suite.git.
	t.Run("ProdFromTemporarySource", func(t *testing.T) {
		ctx := begin(t, stageDev)
		f.startTemporary(t)
		before := time.Now().Add(-time.Second).UTC()
		r := bootstrapJSON(t, append(f.prod, "--source-url", f.tempURL)...)
		if r.code != 0 || !strings.Contains(r.report.check(rootsync.GateRootApplied.ID), f.rev) || !strings.HasPrefix(r.report.check(rootsync.GateTemporaryKept.ID), "pass") {
			t.Fatalf("sync prod from the temporary source:\n%s\n%s", r, r.stderr)
		}
		g, _ := liveGitRepository(ctx, t)
		a := g.Annotations
		since, err := time.Parse(time.RFC3339, a[rootsync.AnnTemporarySince])
		if g.Spec.URL != f.tempURL || a[rootsync.ReconcileAnnotation] != rootsync.ReconcileDisabled || a[rootsync.AnnSource] != rootsync.SourceTemporary ||
			a[rootsync.AnnTemporaryURL] != f.tempURL || a[rootsync.AnnDeclaredURL] != f.finalURL || err != nil || since.Before(before.Truncate(time.Second)) {
			t.Fatalf("live GitRepository: url %s annotations %v", g.Spec.URL, a)
		}
		// sync applied prod's own cluster-vars (the Kustomizations pick it
		// up on their next reconcile: same revision, no new artifact).
		cm, err := suite.cs.CoreV1().ConfigMaps(fluxNS).Get(ctx, "cluster-vars", metav1.GetOptions{})
		if err != nil || cm.Data["environment"] != "prod" {
			t.Fatalf("prod cluster-vars not applied: %v %v", err, cm.Data)
		}
		st.reached(t, stageProdTemp)
	})

	t.Run("CommitToTemporaryReachesRootURLStaysTemporary", func(t *testing.T) {
		ctx := begin(t, stageProdTemp)
		// Pushed to the temporary server and to the final one (the mirror's
		// upstream has it too); the root reaches it.
		f.pushed = f.commitWave(t, "2", "web: wave 2", "origin", "final")
		newRev := "main@sha1:" + f.pushed
		g, _ := liveGitRepository(ctx, t)
		if g.Spec.URL != f.tempURL || g.Annotations[rootsync.ReconcileAnnotation] != rootsync.ReconcileDisabled {
			t.Fatalf("the root reconciled %s and undid the temporary source: url %s, annotations %v", newRev, g.Spec.URL, g.Annotations)
		}
		// A plain re-run keeps the temporary source, says so, changes nothing.
		r := bootstrapJSON(t, f.prod...)
		if r.code != 0 || r.report.Changed || !strings.HasPrefix(r.report.check(rootsync.GateTemporary.ID), "warn") || !strings.Contains(r.report.check(rootsync.GateTemporary.ID), "kept") {
			t.Fatalf("re-run on a temporary source:\n%s", r)
		}
		if g2, _ := liveGitRepository(ctx, t); g2.Spec.URL != f.tempURL || g2.Annotations[rootsync.AnnTemporarySince] != g.Annotations[rootsync.AnnTemporarySince] {
			t.Fatalf("re-run changed the temporary source: %s %v", g2.Spec.URL, g2.Annotations)
		}
		for _, k := range homelabKustomizations {
			waitRevision(ctx, t, k, newRev)
		}
		st.reached(t, stagePushed)
	})

	t.Run("CutoverToUnreachableRollsBack", func(t *testing.T) {
		ctx := begin(t, stagePushed)
		r := bootstrapJSON(t, "cutover", "--to", "http://127.0.0.1:1/homelab.git", "--timeout", "20s")
		if r.code != 1 || !strings.HasPrefix(r.report.check(cutover.GateFinalReady.ID), "fail") || !strings.HasPrefix(r.report.check(cutover.GateRollback.ID), "pass") {
			t.Fatalf("cutover to an unreachable URL:\n%s\n%s", r, r.stderr)
		}
		g, _ := liveGitRepository(ctx, t)
		if g.Spec.URL != f.tempURL || g.Annotations[rootsync.AnnSource] != rootsync.SourceTemporary || g.Status.Artifact == nil || g.Status.Artifact.Revision != "main@sha1:"+f.pushed {
			t.Fatalf("after the rollback: url %s annotations %v artifact %+v", g.Spec.URL, g.Annotations, g.Status.Artifact)
		}
		waitRevision(ctx, t, "flux-system", "main@sha1:"+f.pushed)
	})

	t.Run("CutoverInterruptedRollsBackExit130", func(t *testing.T) {
		ctx := begin(t, stagePushed)
		unreachable := "http://127.0.0.1:1/homelab.git"
		cmd := exec.Command(bootstrapCLI(t), "cutover", "--to", unreachable, "--timeout", "2m", "-o", "json", "--kubeconfig", suite.sb.KubeconfigPath)
		var o, e bytes.Buffer
		cmd.Stdout, cmd.Stderr = &o, &e
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// SIGINT once the switch is applied: the command waits for a source
		// that never comes up.
		waitFor(ctx, t, suite.client, &sourcev1.GitRepositoryList{}, fluxNS, "flux-system", func(g *sourcev1.GitRepository) (bool, string) {
			return g.Spec.URL == unreachable, "url " + g.Spec.URL
		})
		time.Sleep(time.Second)
		start := time.Now()
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		var r cliReport
		if err := json.Unmarshal(o.Bytes(), &r); err != nil {
			t.Fatalf("stdout is not a JSON report: %v\n%s\n%s", err, o.String(), e.String())
		}
		code := cmd.ProcessState.ExitCode()
		if code != 130 || r.ExitCode != 130 || !strings.Contains(r.Error, "interrupted by SIGINT: phase cutover interrupted") ||
			!strings.HasPrefix(r.check(cutover.GateRollback.ID), "pass") {
			t.Fatalf("interrupted cutover: exit %d (report %d), error %q, rollback %s\n%s", code, r.ExitCode, r.Error, r.check(cutover.GateRollback.ID), o.String())
		}
		t.Logf("interrupt to exit: %s (rollback included)", time.Since(start).Round(time.Millisecond))
		g, _ := liveGitRepository(ctx, t)
		if g.Spec.URL != f.tempURL || g.Annotations[rootsync.AnnSource] != rootsync.SourceTemporary {
			t.Fatalf("after the interrupted cutover: url %s annotations %v", g.Spec.URL, g.Annotations)
		}
	})

	t.Run("CutoverToFinalThenTemporaryStopped", func(t *testing.T) {
		ctx := begin(t, stagePushed)
		r := bootstrapJSON(t, "cutover", "--timeout", "4m")
		if r.code != 0 || !strings.HasPrefix(r.report.check(cutover.GateFinalRevision.ID), "pass") || !strings.HasPrefix(r.report.check(cutover.GateHandedBack.ID), "pass") ||
			!strings.HasPrefix(r.report.check(cutover.GateConsumersReady.ID), "pass") {
			t.Fatalf("cutover:\n%s\n%s", r, r.stderr)
		}
		g, _ := liveGitRepository(ctx, t)
		for k := range g.Annotations {
			if strings.HasPrefix(k, rootsync.AnnotationPrefix) || k == rootsync.ReconcileAnnotation {
				t.Errorf("annotation %s left after cutover", k)
			}
		}
		if g.Spec.URL != f.finalURL {
			t.Fatalf("url %s after cutover, want %s", g.Spec.URL, f.finalURL)
		}
		f.stopTemporary(t)
		// A commit to the final server propagates.
		sha := f.commitWave(t, "3", "web: wave 3, after cutover", "final")
		// The product's walk carries the commit down the chain (nudging each
		// dependent), instead of the controllers' 30 s dependency requeues.
		cv := bootstrapJSON(t, "converge", "--repo", f.repoDir, "--env", "prod", "--timeout", "3m")
		if cv.code != 0 {
			t.Fatalf("converge after the commit to the final server:\n%s\n%s", cv, cv.stderr)
		}
		for _, k := range homelabKustomizations {
			waitRevision(ctx, t, k, "main@sha1:"+sha)
		}
		cm, err := suite.cs.CoreV1().ConfigMaps("homelab-apps").Get(ctx, "web", metav1.GetOptions{})
		if err != nil || cm.Data["wave"] != "3" {
			t.Fatalf("web ConfigMap after a commit to the final server: %v %v", err, cm.Data)
		}
		// The root re-applied git's GitRepository: still final, no override.
		if g, _ := liveGitRepository(ctx, t); g.Spec.URL != f.finalURL {
			t.Fatalf("url %s", g.Spec.URL)
		}
		// Cutover again: nothing to do.
		again := bootstrapJSON(t, "cutover")
		if again.code != 0 || again.report.Changed {
			t.Fatalf("second cutover:\n%s", again)
		}
		st.reached(t, stageCutOver)
	})

	t.Run("ClusterURLCredentialsRedacted", func(t *testing.T) {
		ctx := begin(t, stageCutOver)
		// Someone put credentials into the live GitRepository's spec.url:
		// no output channel of a cutover shows them. (After the cutover:
		// the root re-applies git's URL with force, so the test's own
		// field ownership does not outlive it.)
		const pw = "e2e-cluster-pw"
		setURL := func(v string) {
			patch := fmt.Sprintf(`{"spec":{"url":%q}}`, v)
			if err := suite.client.Patch(ctx, &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "flux-system"}}, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
				t.Fatal(err)
			}
		}
		setURL(strings.Replace(f.finalURL, "http://", "http://bot:"+pw+"@", 1))
		defer setURL(f.finalURL)
		dir := t.TempDir()
		rj, ju := filepath.Join(dir, "r.json"), filepath.Join(dir, "j.xml")
		for _, args := range [][]string{{"cutover", "--dry-run"}, {"cutover"}} {
			r := bootstrapJSON(t, append(args, "--report-json", rj, "--junit", ju)...)
			channels := map[string]string{"stdout": r.stdout, "stderr": r.stderr}
			for _, p := range []string{rj, ju} {
				b, _ := os.ReadFile(p)
				channels[p] = string(b)
			}
			for name, c := range channels {
				if strings.Contains(c, pw) {
					t.Errorf("%v: %s shows the credential:\n%s", args, name, c)
				}
			}
			if r.code != 0 || !strings.Contains(r.stdout, "http://redacted@127.0.0.1") {
				t.Errorf("%v: exit %d; the live URL is not shown redacted:\n%s", args, r.code, r.stdout)
			}
		}
	})
}
