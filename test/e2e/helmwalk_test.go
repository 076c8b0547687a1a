//go:build e2e

package e2e

// HelmReleases as nodes of the walk, end to end: `bootstrap up` of the
// HelmRelease fixture (testdata/helm) on the sandbox, with the real
// helm-controller installing our charts from the sandbox's OCI registry
// and chart repository; `status` reporting every HelmRelease; and a
// release that fails (its chart rejected by the API server) failing
// converge and status by name, with helm-controller's words, well within
// --fail-after — although its Kustomization has wait: false and is Ready.

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// helmFixture is the HelmRelease fixture in a repository of a sandbox's Git
// server, its chart hosts pointed at the sandbox's registry, with the charts
// pushed and the CA Secret every source names made out of band.
type helmFixture struct {
	dir  string
	rev  string // the revision the fixture was first committed at
	repo interface {
		Commit(ctx context.Context, fixture string, files map[string]string, msg string) (string, error)
	}
}

func newHelmFixture(ctx context.Context, t *testing.T, e *env) *helmFixture {
	t.Helper()
	reg := e.registry
	if reg == nil || e.git == nil {
		t.Fatalf("sandbox %s has no chart registry or Git server", e.name)
	}
	for _, c := range []string{"cni", "platform", "app", "broken"} {
		if _, _, err := reg.PushChart(ctx, filepath.Join(e.root, "testdata", "charts", c), "1.0.0"); err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"kube-system", "platform", "apps"} {
		err := e.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		if err := reg.EnsureCASecret(ctx, e.client, ns, "sandbox-ca"); err != nil {
			t.Fatal(err)
		}
	}
	name := "helm"
	if e == suite {
		name = freshRepoName("helm")
	}
	url := e.git.URL + "/" + name + ".git"
	dir := copyDir(t, filepath.Join(e.root, "testdata", "helm"), map[string]string{
		"clusters/dev/source.yaml": fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: %s\n  ref:\n    branch: main\n", url),
	})
	pointAtRegistry(t, dir, map[string]string{
		"oci://registry.example.invalid/": "oci://" + reg.Host() + "/",
		"https://charts.example.invalid":  strings.TrimSuffix(reg.HelmRepoURL(), "/"),
	})
	repo, rev, err := e.git.CreateRepo(ctx, name, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	return &helmFixture{dir: dir, rev: rev, repo: repo}
}

// pointAtRegistry replaces the fixture's chart hosts in every YAML file.
func pointAtRegistry(t *testing.T, dir string, hosts map[string]string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s := string(b)
		for from, to := range hosts {
			s = strings.ReplaceAll(s, from, to)
		}
		return os.WriteFile(p, []byte(s), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

var helmNodes = []string{"HelmRelease/kube-system/cilium", "HelmRelease/platform/cert-manager", "HelmRelease/platform/issuers", "HelmRelease/apps/web"}

func TestHelmReleaseWalk(t *testing.T) {
	ctx := timeoutCtx(t, 15*time.Minute)
	ensureFlux(t)
	f := newHelmFixture(ctx, t, suite)

	t.Run("UpWalksEveryHelmRelease", func(t *testing.T) {
		r := bootstrapJSON(t, "up", "--repo", f.dir, "--env", "dev", "--timeout", "6m", "--fail-after", "90s")
		if r.code != 0 {
			t.Fatalf("up:\n%s\nstderr:\n%s", r, r.stderr)
		}
		for _, n := range helmNodes {
			if got := r.report.check("converge.node/" + n); !strings.HasPrefix(got, "pass") {
				t.Errorf("converge.node/%s: %q, want pass", n, got)
			}
		}
		// What helm-controller really installed: the substituted knob.
		rel, err := deployedRelease(ctx, suite.client, suite.cs, "kube-system", "cilium")
		if err != nil {
			t.Fatal(err)
		}
		if got := rel.Config["k8sServiceHost"]; got != "10.0.0.10" {
			t.Errorf("the cilium release runs with k8sServiceHost %q, want the cluster-vars value 10.0.0.10", got)
		}
		cp := r.report.Facts["converge.critical-path"]
		if !strings.Contains(cp, "HelmRelease/") {
			t.Errorf("critical path %q runs through no HelmRelease", cp)
		}
		// The memory budget (200 MiB for a full up of this fixture) is a
		// number to report, not a test's verdict: docs/benchmarks.md.
		t.Logf("critical path: %s; nudges %s; converge %s; up peak RSS %.0f MiB", cp, r.report.Facts["converge.nudges"], r.report.Facts["converge.duration"], r.maxRSSMiB)
	})

	t.Run("StatusSeesEveryHelmRelease", func(t *testing.T) {
		r := bootstrapJSON(t, "status", "--repo", f.dir, "--env", "dev")
		if r.code != 0 {
			t.Fatalf("status:\n%s", r)
		}
		for _, n := range helmNodes {
			if got := r.report.check("converge.node/" + n); !strings.HasPrefix(got, "pass") {
				t.Errorf("status converge.node/%s: %q, want pass", n, got)
			}
		}
	})

	t.Run("FailedReleaseFailsByName", func(t *testing.T) {
		// The app's chart becomes one whose manifest the API server
		// rejects: helm-controller's upgrade fails and, with no upgrade
		// retries (the default), the release stalls. apps has wait: false:
		// its Kustomization is Ready regardless.
		web := filepath.Join(f.dir, "apps", "web", "web.yaml")
		b, err := os.ReadFile(web)
		if err != nil {
			t.Fatal(err)
		}
		broken := strings.Replace(string(b), "/charts/app\n", "/charts/broken\n", 1)
		if broken == string(b) {
			t.Fatal("apps/web/web.yaml does not name charts/app")
		}
		r, took := f.convergeAfter(ctx, t, "apps/web/web.yaml", broken, "web: the broken chart", "90s")
		got := r.report.check("converge.node/HelmRelease/apps/web")
		if r.code != 1 || !strings.HasPrefix(got, "fail") {
			t.Fatalf("converge after the broken chart: exit %d, web %q\n%s", r.code, got, r)
		}
		if !strings.Contains(got, "Helm upgrade failed") && !strings.Contains(got, "UpgradeFailed") && !strings.Contains(got, "RetriesExceeded") {
			t.Errorf("web's gate does not carry helm-controller's words: %q", got)
		}
		if k := r.report.check("converge.node/flux-system/apps"); !strings.HasPrefix(k, "pass") {
			t.Errorf("apps (wait: false) is %q; it applied the new revision and is Ready", k)
		}
		t.Logf("converge failed in %s: %s", took.Round(time.Second), got)

		s := bootstrapJSON(t, "status", "--repo", f.dir, "--env", "dev")
		if sg := s.report.check("converge.node/HelmRelease/apps/web"); s.code != 1 || !strings.HasPrefix(sg, "fail") {
			t.Fatalf("status after the broken chart: exit %d, web %q\n%s", s.code, sg, s)
		}
	})

	t.Run("MissingChartFailsByName", func(t *testing.T) {
		// A chart version the Helm repository does not have, asked for by
		// issuers (its spec changes, so helm-controller tries it afresh):
		// source-controller fails the HelmChart, and converge names the
		// release with the source's words within --fail-after, not at
		// --timeout.
		platform := filepath.Join(f.dir, "platform", "platform.yaml")
		b, err := os.ReadFile(platform)
		if err != nil {
			t.Fatal(err)
		}
		at := strings.Index(string(b), "name: issuers")
		if at < 0 {
			t.Fatal("platform/platform.yaml has no issuers release")
		}
		missing := string(b[:at]) + strings.Replace(string(b[at:]), "version: 1.0.0", "version: 9.9.9", 1)
		r, took := f.convergeAfter(ctx, t, "platform/platform.yaml", missing, "issuers: a chart version that does not exist", "30s")
		got := r.report.check("converge.node/HelmRelease/platform/issuers")
		if r.code != 1 || !strings.HasPrefix(got, "fail") {
			t.Fatalf("converge with a missing chart: exit %d, issuers %q\n%s", r.code, got, r)
		}
		if !strings.Contains(got, "9.9.9") {
			t.Errorf("issuers' gate does not name the missing version: %q", got)
		}
		if strings.Contains(got, "not converged within") {
			t.Errorf("issuers waited for --timeout instead of failing after --fail-after: %q", got)
		}
		t.Logf("converge failed in %s: %s", took.Round(time.Second), got)
	})

	t.Run("RefusingRegistryFailsByName", func(t *testing.T) {
		// A new release, never installed, whose OCIRepository reaches the
		// sandbox registry without its CA: the registry's TLS is refused,
		// source-controller fails the source, helm-controller never gets
		// a chart. converge names the release with the source's words
		// within --fail-after, not at --timeout.
		web, err := os.ReadFile(filepath.Join(f.dir, "apps", "web", "web.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		refused := strings.NewReplacer("name: app-chart", "name: refused-chart", "  certSecretRef:\n    name: sandbox-ca\n", "", "name: web", "name: refused", "/charts/broken\n", "/charts/app\n",
			"  dependsOn:\n    - name: issuers\n      namespace: platform\n", "").Replace(string(web))
		if strings.Contains(refused, "certSecretRef") || strings.Contains(refused, "dependsOn") || !strings.Contains(refused, "name: refused-chart") {
			t.Fatalf("apps/web/web.yaml is not in the shape this test edits:\n%s", refused)
		}
		r, took := f.convergeAfter(ctx, t, "apps/web/refused.yaml", refused, "refused: a release whose registry's TLS is not trusted", "30s")
		got := r.report.check("converge.node/HelmRelease/apps/refused")
		if r.code != 1 || !strings.HasPrefix(got, "fail") {
			t.Fatalf("converge with a refusing registry: exit %d, refused %q\n%s", r.code, got, r)
		}
		if !strings.Contains(got, "x509") && !strings.Contains(got, "certificate") && !strings.Contains(got, "tls") {
			t.Errorf("refused's gate does not carry the source's TLS words: %q", got)
		}
		if strings.Contains(got, "not converged within") {
			t.Errorf("refused waited for --timeout instead of failing after --fail-after: %q", got)
		}
		t.Logf("converge failed in %s: %s", took.Round(time.Second), got)
	})
}

// convergeAfter commits content as file (and writes it to the checkout),
// waits until the GitRepository serves that commit, and runs converge with
// --fail-after failAfter: its result and how long it took.
func (f *helmFixture) convergeAfter(ctx context.Context, t *testing.T, file, content, msg, failAfter string) (syncRun, time.Duration) {
	t.Helper()
	sha, err := f.repo.Commit(ctx, "", map[string]string{file: content}, msg)
	if err != nil {
		t.Fatal(err)
	}
	fetched(ctx, t, sha)
	if err := os.WriteFile(filepath.Join(f.dir, filepath.FromSlash(file)), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	r := bootstrapJSON(t, "converge", "--repo", f.dir, "--env", "dev", "--timeout", "5m", "--fail-after", failAfter)
	return r, time.Since(t0)
}

// fetched asks the suite's GitRepository to fetch (as `flux reconcile
// source git` does) and waits until its artifact is the commit sha: converge
// observes the revision the source serves, it does not fetch.
func fetched(ctx context.Context, t *testing.T, sha string) {
	t.Helper()
	gr := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "flux-system"}}
	requestReconcile(ctx, t, gr)
	waitFor(ctx, t, suite.client, &sourcev1.GitRepositoryList{}, fluxNS, "flux-system", func(gr *sourcev1.GitRepository) (bool, string) {
		got := ""
		if gr.Status.Artifact != nil {
			got = gr.Status.Artifact.Revision
		}
		return got == "main@sha1:"+sha, "artifact " + got
	})
}
