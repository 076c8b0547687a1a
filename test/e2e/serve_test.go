//go:build e2e

package e2e

// The cold production bring-up with no Git server at all: `bootstrap up
// --serve` makes this machine the temporary source, on a sandbox of its
// own. The served source outlives the command, refuses a wrong token and a
// push, serves the checkout's HEAD, refuses a dirty tree; then a Git server
// playing the in-cluster Gitea receives the repository, and
// `--cutover-when-ready` moves the cluster to it and the serving process
// stops by itself.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/cutover"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/sandbox"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
	"github.com/homelab-ops/bootstrap/internal/serve"
	"github.com/homelab-ops/bootstrap/internal/wait"
)

// serveCLI runs bootstrap against g with its own state directory; the age
// key (if any) on stdin.
type serveCLI struct {
	t        *testing.T
	g        *gEnv
	stateDir string
}

type serveRun struct {
	syncRun
	facts map[string]string
}

func (c serveCLI) run(stdin string, args ...string) serveRun {
	c.t.Helper()
	full := append(append([]string{}, args...), "-o", "json", "--kubeconfig", c.g.sb.KubeconfigPath)
	cmd := exec.Command(bootstrapCLI(c.t), full...)
	cmd.Env = append(os.Environ(), "BOOTSTRAP_STATE_DIR="+c.stateDir)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var r serveRun
	r.code, r.stdout, r.stderr, r.report = runJSON(c.t, cmd)
	var f struct{ Facts map[string]string }
	_ = json.Unmarshal([]byte(r.stdout), &f)
	r.facts = f.Facts
	return r
}

// status is `bootstrap serve status -o json`: its exit code and document.
func (c serveCLI) status() (int, struct {
	Running bool
	State   *serve.State
}) {
	c.t.Helper()
	cmd := exec.Command(bootstrapCLI(c.t), "serve", "status", "-o", "json", "--kubeconfig", c.g.sb.KubeconfigPath)
	cmd.Env = append(os.Environ(), "BOOTSTRAP_STATE_DIR="+c.stateDir)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	_ = cmd.Run()
	var s struct {
		Running bool
		State   *serve.State
	}
	if err := json.Unmarshal(o.Bytes(), &s); err != nil {
		c.t.Fatalf("serve status: %v\n%s\n%s", err, o.String(), e.String())
	}
	return cmd.ProcessState.ExitCode(), s
}

func (c serveCLI) stop() {
	cmd := exec.Command(bootstrapCLI(c.t), "serve", "stop", "--kubeconfig", c.g.sb.KubeconfigPath)
	cmd.Env = append(os.Environ(), "BOOTSTRAP_STATE_DIR="+c.stateDir)
	_ = cmd.Run()
}

// singleRepoFixture is the homelab fixture with every Kustomization on the
// root's own repository (the shared source's Kustomizations read it too):
// a cold bring-up with one repository and no Git server at all.
func singleRepoFixture(t *testing.T, finalURL, enc string) string {
	source := fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  url: %s\n", finalURL)
	return copyDir(t, filepath.Join(suite.root, "testdata", "homelab"), map[string]string{
		"clusters/prod/source.yaml":                    source,
		"clusters/dev/source.yaml":                     source,
		"clusters/base/flux-system/shared-source.yaml": "",
		"clusters/base/kustomization.yaml":             strings.Replace(readFixture(t, "clusters/base/kustomization.yaml"), "  - flux-system/shared-source.yaml\n", "", 1),
		"clusters/base/monitoring.yaml":                strings.ReplaceAll(readFixture(t, "clusters/base/monitoring.yaml"), "name: shared", "name: flux-system"),
		"apps/secrets/secret.sops.yaml":                enc,
	})
}

func TestServe(t *testing.T) {
	ctx := timeoutCtx(t, 15*time.Minute)
	g, err := startGEnv(ctx, "serve", t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	c := serveCLI{t: t, g: g, stateDir: t.TempDir()}
	defer c.stop()

	// The in-cluster Gitea's address, known before it exists.
	finalPort, err := sandbox.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	finalAddr := fmt.Sprintf("127.0.0.1:%d", finalPort)
	finalURL := "http://" + finalAddr + "/homelab.git"
	key, enc := sopsFixtureSecret(t, "serve-s3cr3t")
	work := singleRepoFixture(t, finalURL, enc)
	git(t, work, "init", "--quiet", "--initial-branch=main")
	git(t, work, "add", "--all")
	git(t, work, "commit", "--quiet", "-m", "homelab")
	head := git(t, work, "rev-parse", "HEAD")
	rev := "main@sha1:" + head
	up := []string{"up", "--repo", work, "--env", "prod", "--age-key-file", "-", "--timeout", "3m"}

	t.Run("RefusedBeforeAnyRequest", func(t *testing.T) {
		taken, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer taken.Close()
		for _, bad := range []struct {
			args []string
			want string
		}{
			{[]string{"--serve", "--source-url", "https://mirror.lan/x.git"}, "exclusive"},
			{[]string{"--serve=" + taken.Addr().String()}, "cannot listen"},
			{[]string{"--serve", "--serve-url", "http://plain.lan"}, "https://HOST"},
			{[]string{"--serve", "--serve-for", "0s"}, "--serve-for"},
		} {
			r := c.run(key, append(append([]string{}, up...), bad.args...)...)
			if r.code != 2 || !strings.Contains(r.report.Error, bad.want) {
				t.Errorf("%v: want exit 2 naming %q:\n%s", bad.args, bad.want, r)
			}
		}
		var ns corev1.Namespace
		if err := g.client.Get(ctx, client.ObjectKey{Name: fluxNS}, &ns); !apierrors.IsNotFound(err) {
			t.Fatalf("a refused run wrote to the cluster: namespace %s: %v", fluxNS, err)
		}
	})

	var pid string
	t.Run("ColdUpServes", func(t *testing.T) {
		t0 := time.Now()
		r := c.run(key, append(append([]string{}, up...), "--serve")...)
		if r.code != 0 || !strings.HasPrefix(r.report.check("converge.graph"), "pass") {
			t.Fatalf("up --serve on a cold cluster with no Git server:\n%s\n%s", r, r.stderr)
		}
		t.Logf("up --serve: exit 0 in %s; served %s from %s", time.Since(t0).Round(100*time.Millisecond), r.facts["serveRevision"], r.facts["serveURL"])
		for _, ch := range r.report.Checks {
			if strings.HasPrefix(ch.ID, "converge.node/") && ch.Verdict != "pass" {
				t.Errorf("%s %s: %s", ch.ID, ch.Verdict, ch.Message)
			}
		}
		pid = r.facts["servePID"]
		var gr sourcev1.GitRepository
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system"}, &gr); err != nil {
			t.Fatal(err)
		}
		if gr.Spec.URL != r.facts["serveURL"] || !strings.HasPrefix(gr.Spec.URL, "https://127.0.0.1:") || gr.Annotations[rootsync.AnnSource] != rootsync.SourceTemporary ||
			gr.Annotations[rootsync.AnnDeclaredURL] != finalURL || gr.Spec.SecretRef == nil || gr.Spec.SecretRef.Name != serve.SecretName {
			t.Fatalf("GitRepository after up --serve: url %s secretRef %v annotations %v", gr.Spec.URL, gr.Spec.SecretRef, gr.Annotations)
		}
		if gr.Status.Artifact == nil || gr.Status.Artifact.Revision != rev || r.facts["serveRevision"] != rev {
			t.Fatalf("served revision: artifact %+v, report %s, want the checkout's HEAD %s", gr.Status.Artifact, r.facts["serveRevision"], rev)
		}
		sec, err := g.cs.CoreV1().Secrets("default").Get(ctx, "homelab-secret", metav1.GetOptions{})
		if err != nil || string(sec.Data["value"]) != "serve-s3cr3t" {
			t.Fatalf("the SOPS Secret was not decrypted: %v", err)
		}
		// The token is in the cluster's Secret, never in what up printed.
		auth, err := g.cs.CoreV1().Secrets(fluxNS).Get(ctx, serve.SecretName, metav1.GetOptions{})
		if err != nil || len(auth.Data["password"]) < 40 || len(auth.Data["ca.crt"]) == 0 {
			t.Fatalf("Secret %s: %v", serve.SecretName, err)
		}
		for _, out := range []string{r.stdout, r.stderr, fmt.Sprint(gr.Annotations)} {
			if strings.Contains(out, string(auth.Data["password"])) {
				t.Fatal("the token appears in up's output or the GitRepository's annotations")
			}
		}
	})
	if pid == "" {
		t.Fatal("no serving process")
	}

	t.Run("OutlivesTheCommand", func(t *testing.T) {
		code, s := c.status()
		if code != 0 || !s.Running || s.State == nil || fmt.Sprint(s.State.PID) != pid || s.State.Revision != rev {
			t.Fatalf("serve status after up exited: exit %d %+v", code, s.State)
		}
		auth, err := g.cs.CoreV1().Secrets(fluxNS).Get(ctx, serve.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Neither its argv, its environment nor its log holds the token
		// (a scan that cannot read a file fails).
		for _, f := range []string{fmt.Sprintf("/proc/%s/cmdline", pid), fmt.Sprintf("/proc/%s/environ", pid), s.State.Log} {
			b, err := os.ReadFile(f)
			if err != nil || len(b) == 0 {
				t.Fatalf("read %s: %v (%d bytes)", f, err, len(b))
			}
			if bytes.Contains(b, auth.Data["password"]) {
				t.Fatalf("the token is in %s", f)
			}
		}
		refetch(ctx, t, g, func(gr *sourcev1.GitRepository, ready bool, msg string) (bool, string) {
			return ready && gr.Status.Artifact != nil && gr.Status.Artifact.Revision == rev, msg
		})
	})

	t.Run("WrongTokenIs401", func(t *testing.T) {
		orig, err := g.cs.CoreV1().Secrets(fluxNS).Get(ctx, serve.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bad := orig.DeepCopy()
		bad.Data["password"] = []byte("not-the-token")
		if _, err := g.cs.CoreV1().Secrets(fluxNS).Update(ctx, bad, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		refetch(ctx, t, g, func(gr *sourcev1.GitRepository, ready bool, msg string) (bool, string) {
			return !ready && (strings.Contains(msg, "401") || strings.Contains(msg, "authentication")), msg
		})
		cur, _ := g.cs.CoreV1().Secrets(fluxNS).Get(ctx, serve.SecretName, metav1.GetOptions{})
		cur.Data = orig.Data
		if _, err := g.cs.CoreV1().Secrets(fluxNS).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		refetch(ctx, t, g, func(gr *sourcev1.GitRepository, ready bool, msg string) (bool, string) { return ready, msg })
	})

	t.Run("PushRefused", func(t *testing.T) {
		var gr sourcev1.GitRepository
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system"}, &gr); err != nil {
			t.Fatal(err)
		}
		auth, err := g.cs.CoreV1().Secrets(fluxNS).Get(ctx, serve.SecretName, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ca := filepath.Join(t.TempDir(), "ca.crt")
		if err := os.WriteFile(ca, auth.Data["ca.crt"], 0o600); err != nil {
			t.Fatal(err)
		}
		header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(string(auth.Data["username"])+":"+string(auth.Data["password"])))
		env := append(os.Environ(), "GIT_SSL_CAINFO="+ca, "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0="+header, "GIT_TERMINAL_PROMPT=0")
		gitEnv := func(dir string, args ...string) (string, error) {
			cmd := exec.Command("git", append([]string{"-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid"}, args...)...)
			cmd.Dir, cmd.Env = dir, env
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		clone := filepath.Join(t.TempDir(), "clone")
		if out, err := gitEnv("", "clone", "--quiet", gr.Spec.URL, clone); err != nil {
			t.Fatalf("clone from the served source: %v\n%s", err, out)
		}
		if got := git(t, clone, "rev-parse", "HEAD"); got != head {
			t.Fatalf("cloned %s, want the checkout's HEAD %s", got, head)
		}
		git(t, clone, "commit", "--quiet", "--allow-empty", "-m", "not allowed")
		if out, err := gitEnv(clone, "push", "origin", "HEAD:main"); err == nil || !strings.Contains(out, "403") {
			t.Fatalf("push to the served source: want refused (403), got %v\n%s", err, out)
		}
	})

	t.Run("DirtyTreeAndOtherBranchRefused", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(work, "apps", "web", "extra.yaml"), []byte("kind: ConfigMap\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := c.run("", "sync", "--repo", work, "--env", "prod", "--serve")
		_ = os.Remove(filepath.Join(work, "apps", "web", "extra.yaml"))
		if r.code != 2 || !strings.Contains(r.report.Error, "apps/web/extra.yaml") || !strings.Contains(r.report.Error, "commit them") {
			t.Fatalf("sync --serve of a dirty tree: want exit 2 naming the file:\n%s", r)
		}
		git(t, work, "switch", "--quiet", "-c", "feature")
		r = c.run("", "sync", "--repo", work, "--env", "prod", "--serve")
		git(t, work, "switch", "--quiet", "main")
		if r.code != 2 || !strings.Contains(r.report.Error, "on branch feature") || !strings.Contains(r.report.Error, "switch main") {
			t.Fatalf("sync --serve on another branch: want exit 2 naming the branch:\n%s", r)
		}
		if code, s := c.status(); code != 0 || fmt.Sprint(s.State.PID) != pid {
			t.Fatalf("a refused run touched the running server: exit %d %+v", code, s.State)
		}
	})

	t.Run("NodesCannotReachIt", func(t *testing.T) {
		// --serve-url names an address nothing answers on: the source never
		// becomes Ready; exit 1 within --timeout naming the URL, the
		// controller's message and what to check.
		r := c.run("", "sync", "--repo", work, "--env", "prod", "--serve", "--serve-url", "https://127.0.0.1:9", "--timeout", "15s", "--converge=false")
		ready := r.report.check(rootsync.GateSourceReady.ID)
		if r.code != 1 || !strings.Contains(ready, "https://127.0.0.1:9/gitops.git") || !strings.Contains(ready, "connection refused") || !strings.Contains(ready, "firewall") {
			t.Fatalf("sync --serve unreachable from the nodes: want exit 1 naming the URL, the message and the fix:\n%s\n%s", r, r.stderr)
		}
		if code, s := c.status(); code != 0 || fmt.Sprint(s.State.PID) != r.facts["servePID"] {
			t.Fatalf("the source must keep serving for a re-run: exit %d %+v", code, s.State)
		}
		pid = r.facts["servePID"]
	})

	t.Run("CutoverWhenReadyTimesOut", func(t *testing.T) {
		// The final source does not exist yet: the probe says why, the
		// cluster stays on the served source (a new server replaced the old).
		r := c.run("", "sync", "--repo", work, "--env", "prod", "--serve", "--cutover-when-ready", "--cutover-timeout", "8s", "--timeout", "2m")
		reach := r.report.check(cutover.GateFinalReachable.ID)
		if r.code != 1 || !strings.HasPrefix(reach, "fail") || !strings.Contains(reach, finalURL) || !strings.Contains(reach, "connection refused") {
			t.Fatalf("--cutover-when-ready with the final source down: want exit 1 with the probe's message:\n%s\n%s", r, r.stderr)
		}
		var gr sourcev1.GitRepository
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system"}, &gr); err != nil {
			t.Fatal(err)
		}
		if gr.Spec.URL != r.facts["serveURL"] || gr.Annotations[rootsync.AnnSource] != rootsync.SourceTemporary {
			t.Fatalf("after the timed-out cutover: url %s annotations %v", gr.Spec.URL, gr.Annotations)
		}
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system" + cutover.ProbeSuffix}, &sourcev1.GitRepository{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the probe GitRepository was left behind: %v", err)
		}
		code, s := c.status()
		if code != 0 || fmt.Sprint(s.State.PID) == pid || fmt.Sprint(s.State.PID) != r.facts["servePID"] {
			t.Fatalf("the second --serve did not replace the first (was pid %s, report %s): exit %d %+v", pid, r.facts["servePID"], code, s.State)
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%s", pid)); err == nil {
			t.Fatalf("the replaced server (pid %s) still runs", pid)
		}
		pid = r.facts["servePID"]
	})

	t.Run("CutoverWhenReady", func(t *testing.T) {
		final, err := gitserver.StartOn(filepath.Join(t.TempDir(), "gitea"), "", finalAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer final.Close()
		git(t, "", "clone", "--quiet", "--bare", work, filepath.Join(final.Root, "homelab.git"))
		r := c.run(key, append(append([]string{}, up...), "--serve", "--cutover-when-ready", "--cutover-timeout", "2m")...)
		if r.code != 0 || !strings.HasPrefix(r.report.check(cutover.GateFinalReachable.ID), "pass") || !strings.HasPrefix(r.report.check(cutover.GateHandedBack.ID), "pass") ||
			!strings.HasPrefix(r.report.check(cutover.GateConsumersReady.ID), "pass") || !strings.Contains(r.report.check(cutover.GateServeStopped.ID), "stopped by itself") {
			t.Fatalf("up --serve --cutover-when-ready:\n%s\n%s", r, r.stderr)
		}
		var gr sourcev1.GitRepository
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system"}, &gr); err != nil {
			t.Fatal(err)
		}
		if gr.Spec.URL != finalURL || gr.Annotations[rootsync.AnnSource] != "" || gr.Spec.SecretRef != nil || gr.Status.Artifact == nil || gr.Status.Artifact.Revision != rev {
			t.Fatalf("after the cutover: url %s secretRef %v annotations %v artifact %+v", gr.Spec.URL, gr.Spec.SecretRef, gr.Annotations, gr.Status.Artifact)
		}
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: "flux-system" + cutover.ProbeSuffix}, &sourcev1.GitRepository{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the probe GitRepository was left behind: %v", err)
		}
		if _, err := g.cs.CoreV1().Secrets(fluxNS).Get(ctx, serve.SecretName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the temporary Secret %s is still there: %v", serve.SecretName, err)
		}
		if code, s := c.status(); code != 1 || s.Running {
			t.Fatalf("serve status after the cutover: exit %d %+v", code, s)
		}
		for _, k := range homelabKustomizations {
			var ks kustomizev1.Kustomization
			if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: k}, &ks); err != nil || ks.Status.LastAppliedRevision != rev {
				t.Errorf("Kustomization %s after the cutover: %v %s", k, err, ks.Status.LastAppliedRevision)
			}
		}
	})
}

// refetch asks the root GitRepository to fetch now and waits until it
// handled that request and cond holds.
func refetch(ctx context.Context, t *testing.T, g *gEnv, cond func(gr *sourcev1.GitRepository, ready bool, msg string) (bool, string)) {
	t.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, token)
	obj := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "flux-system"}}
	if err := g.client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := wait.For(wctx, g.client, &sourcev1.GitRepositoryList{}, fluxNS, "flux-system", func(gr *sourcev1.GitRepository) (bool, string) {
		if gr.Status.LastHandledReconcileAt != token {
			return false, "fetch not handled yet"
		}
		status, _, msg, _ := readyStatus(gr.Generation, gr.Status.Conditions)
		return cond(gr, status == metav1.ConditionTrue, msg)
	}); err != nil {
		t.Fatal(err)
	}
}
