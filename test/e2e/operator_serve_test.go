//go:build e2e

package e2e

// The cold bring-up of a Flux Operator layout from a temporary source
// (issue 46 item 2): a FluxInstance (testdata/layouts/instance, ours)
// declares the root with `ref: refs/heads/main`, which the operator writes
// as the GitRepository's spec.ref.name. On a sandbox of its own with no
// Git server, `up --serve` serves the checkout as branch main, the
// GitRepository keeps its declared ref.name, and --cutover-when-ready
// moves it to the declared URL with that ref exactly. A ref --serve cannot
// stand for (a pull request's, a semver range no tag at HEAD satisfies) is
// refused before the first request, naming what to do instead.

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/cutover"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/sandbox"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
)

// instanceFixture is testdata/layouts/instance with the FluxInstance's URL
// (and ref, when given) replaced, committed on branch main.
func instanceFixture(t *testing.T, url, ref string, extra map[string]string) (dir, head string) {
	t.Helper()
	inst := strings.Replace(readFixtureAt(t, "testdata/layouts/instance/flux/instance.yaml"), "https://git.example.invalid/homelab/instance.git", url, 1)
	if ref != "" {
		inst = strings.Replace(inst, "ref: refs/heads/main", "ref: "+ref, 1)
	}
	edits := map[string]string{"flux/instance.yaml": inst}
	for k, v := range extra {
		edits[k] = v
	}
	dir = copyDir(t, filepath.Join(suite.root, "testdata", "layouts", "instance"), edits)
	git(t, dir, "init", "--quiet", "--initial-branch=main")
	git(t, dir, "add", "--all")
	git(t, dir, "commit", "--quiet", "-m", "instance")
	return dir, git(t, dir, "rev-parse", "HEAD")
}

func readFixtureAt(t *testing.T, rel string) string {
	t.Helper()
	return readFile(t, filepath.Join(suite.root, rel))
}

func TestOperatorServe(t *testing.T) {
	ctx := timeoutCtx(t, 15*time.Minute)
	g, err := startGEnv(ctx, "opserve", t.TempDir(), true)
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	c := serveCLI{t: t, g: g, stateDir: t.TempDir()}
	defer c.stop()

	finalPort, err := sandbox.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	finalAddr := fmt.Sprintf("127.0.0.1:%d", finalPort)
	finalURL := "http://" + finalAddr + "/instance.git"
	work, head := instanceFixture(t, finalURL, "", nil)
	// source-controller reports a spec.ref.name whole (commitReference:
	// fluxcd/pkg/git Commit.AbsoluteReference).
	rev := "refs/heads/main@sha1:" + head
	env := []string{"--repo", work, "--path", "clusters/lab"}
	up := append([]string{"up", "--flux-version", "v2.9.5", "--timeout", "3m"}, env...)

	noNamespace := func(t *testing.T) {
		t.Helper()
		var ns corev1.Namespace
		if err := g.client.Get(ctx, client.ObjectKey{Name: fluxNS}, &ns); !apierrors.IsNotFound(err) {
			t.Fatalf("a refused run wrote to the cluster: namespace %s: %v", fluxNS, err)
		}
	}

	t.Run("RefusedRefs", func(t *testing.T) {
		// A pull request's ref is the Git host's: not served, naming
		// --source-url and the branch form.
		pr, _ := instanceFixture(t, finalURL, "refs/pull/7/head", nil)
		r := c.run("", "up", "--flux-version", "v2.9.5", "--repo", pr, "--path", "clusters/lab", "--serve")
		if r.code != 2 || !strings.Contains(r.report.Error, "refs/pull/7/head") || !strings.Contains(r.report.Error, "--source-url") {
			t.Errorf("up --serve of a refs/pull ref: want exit 2 naming the ref and --source-url:\n%s", r)
		}
		// A committed GitRepository with a semver range no tag at HEAD
		// satisfies: refused naming the tag to make.
		root := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m\n  url: " + finalURL + "\n  ref:\n    semver: \">=1.0.0\"\n" +
			"---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/lab\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
		sv, _ := instanceFixture(t, finalURL, "", map[string]string{
			"flux/instance.yaml":              "",
			"clusters/lab/flux-system.yaml":   root,
			"clusters/lab/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - flux-system.yaml\n  - config.yaml\n  - apps.yaml\n",
		})
		git(t, sv, "tag", "v0.9.0")
		r = c.run("", "sync", "--repo", sv, "--path", "clusters/lab", "--serve")
		if r.code != 2 || !strings.Contains(r.report.Error, `spec.ref.semver >=1.0.0`) || !strings.Contains(r.report.Error, "tags there: v0.9.0") || !strings.Contains(r.report.Error, "tag vX.Y.Z") {
			t.Errorf("sync --serve of a semver range no tag satisfies: want exit 2 naming the range and the fix:\n%s", r)
		}
		noNamespace(t)
	})

	t.Run("DryRunOnAFreshCluster", func(t *testing.T) {
		// Issue 46's done-when: on a fresh sandbox, up --serve --dry-run
		// plans every phase for an Operator-layout repository declaring
		// ref refs/heads/main, and changes nothing.
		r := c.run("", append(append([]string{}, up...), "--serve", "--dry-run")...)
		if r.code != 0 {
			t.Errorf("up --serve --dry-run on a fresh cluster: exit %d, want 0:\n%s", r.code, r)
		}
		for _, id := range []string{"controllers.dry-run", "sync.planned"} {
			if v := r.report.check(id); !strings.HasPrefix(v, "pass") && !strings.HasPrefix(v, "warn") {
				t.Errorf("up --serve --dry-run: %s is %q, want planned (pass or warn)", id, v)
			}
		}
		noNamespace(t)
	})

	t.Run("ColdUpServes", func(t *testing.T) {
		r := c.run("", append(append([]string{}, up...), "--serve")...)
		if r.code != 0 || !strings.HasPrefix(r.report.check("converge.graph"), "pass") {
			t.Fatalf("up --serve of the FluxInstance layout with ref refs/heads/main:\n%s\n%s", r, r.stderr)
		}
		if r.facts["serveRevision"] != rev || !strings.Contains(r.facts["serveOrigin"], "served as branch main (spec.ref.name refs/heads/main)") {
			t.Errorf("served %s (%s), want %s as branch main", r.facts["serveRevision"], r.facts["serveOrigin"], rev)
		}
		var gr sourcev1.GitRepository
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxNS}, &gr); err != nil {
			t.Fatal(err)
		}
		// The declared ref stays: the served repository holds branch main.
		if gr.Spec.URL != r.facts["serveURL"] || gr.Spec.Reference == nil || *gr.Spec.Reference != (sourcev1.GitRepositoryRef{Name: "refs/heads/main"}) ||
			gr.Annotations[rootsync.AnnSource] != rootsync.SourceTemporary || gr.Annotations[rootsync.AnnDeclaredURL] != finalURL {
			t.Fatalf("GitRepository after up --serve: url %s ref %+v annotations %v", gr.Spec.URL, gr.Spec.Reference, gr.Annotations)
		}
		var recorded sourcev1.GitRepositoryRef
		if err := json.Unmarshal([]byte(gr.Annotations[rootsync.AnnDeclaredRef]), &recorded); err != nil || recorded != (sourcev1.GitRepositoryRef{Name: "refs/heads/main"}) {
			t.Fatalf("declared-ref record %q: %v", gr.Annotations[rootsync.AnnDeclaredRef], err)
		}
		if gr.Status.Artifact == nil || gr.Status.Artifact.Revision != rev {
			t.Fatalf("artifact %+v, want %s", gr.Status.Artifact, rev)
		}
		var cm corev1.ConfigMap
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "instance-app"}, &cm); err != nil {
			t.Fatalf("the child Kustomization's ConfigMap: %v", err)
		}
	})

	t.Run("DryRunWithFluxInstalled", func(t *testing.T) {
		r := c.run("", append(append([]string{}, up...), "--serve", "--dry-run")...)
		if r.code != 0 || !strings.Contains(r.report.check(rootsync.GateTemporary.ID), "served as branch main (spec.ref.name refs/heads/main)") {
			t.Errorf("up --serve --dry-run with Flux installed: want exit 0 planning the served branch:\n%s\n%s", r, r.stderr)
		}
	})

	t.Run("CutoverWhenReady", func(t *testing.T) {
		final, err := gitserver.StartOn(filepath.Join(t.TempDir(), "gitea"), "", finalAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer final.Close()
		git(t, "", "clone", "--quiet", "--bare", work, filepath.Join(final.Root, "instance.git"))
		r := c.run("", append(append([]string{"sync"}, env...), "--serve", "--cutover-when-ready", "--cutover-timeout", "2m", "--timeout", "3m")...)
		if r.code != 0 || !strings.HasPrefix(r.report.check(cutover.GateFinalReachable.ID), "pass") || !strings.HasPrefix(r.report.check(cutover.GateHandedBack.ID), "pass") ||
			!strings.HasPrefix(r.report.check(cutover.GateConsumersReady.ID), "pass") || !strings.HasPrefix(r.report.check(cutover.GateServeStopped.ID), "pass") {
			t.Fatalf("sync --serve --cutover-when-ready:\n%s\n%s", r, r.stderr)
		}
		var gr sourcev1.GitRepository
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxNS}, &gr); err != nil {
			t.Fatal(err)
		}
		if gr.Spec.URL != finalURL || gr.Spec.Reference == nil || *gr.Spec.Reference != (sourcev1.GitRepositoryRef{Name: "refs/heads/main"}) ||
			gr.Annotations[rootsync.AnnSource] != "" || gr.Annotations[rootsync.AnnDeclaredRef] != "" || gr.Spec.SecretRef != nil ||
			gr.Status.Artifact == nil || gr.Status.Artifact.Revision != rev {
			t.Fatalf("after the cutover: url %s ref %+v secretRef %v annotations %v artifact %+v", gr.Spec.URL, gr.Spec.Reference, gr.Spec.SecretRef, gr.Annotations, gr.Status.Artifact)
		}
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxNS + cutover.ProbeSuffix}, &sourcev1.GitRepository{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the probe GitRepository was left behind: %v", err)
		}
		if code, s := c.status(); code != 1 || s.Running {
			t.Fatalf("serve status after the cutover: exit %d %+v", code, s)
		}
		for _, k := range []string{fluxNS, "instance-apps"} {
			var ks kustomizev1.Kustomization
			if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: k}, &ks); err != nil || ks.Status.LastAppliedRevision != rev {
				t.Errorf("Kustomization %s after the cutover: %v %s", k, err, ks.Status.LastAppliedRevision)
			}
		}
	})

	t.Run("TagServed", func(t *testing.T) {
		// sync.ref refs/tags/v1.0.0 with no such tag in the checkout: HEAD
		// is served as that tag (the report says so), the GitRepository
		// keeps ref.name, and source-controller checks the tag out.
		tagged, head := instanceFixture(t, finalURL, "refs/tags/v1.0.0", map[string]string{"apps/configmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: instance-app\n  namespace: default\ndata:\n  layout: tagged\n"})
		r := c.run("", "sync", "--repo", tagged, "--path", "clusters/lab", "--serve", "--timeout", "3m")
		want := "refs/tags/v1.0.0@sha1:" + head
		if r.code != 0 || r.facts["serveRevision"] != want || !strings.Contains(r.facts["serveOrigin"], "served as tag v1.0.0 (spec.ref.name refs/tags/v1.0.0); the checkout has no tag v1.0.0") {
			t.Fatalf("sync --serve of ref refs/tags/v1.0.0: want exit 0 serving %s\n%s\n%s", want, r, r.stderr)
		}
		var gr sourcev1.GitRepository
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxNS}, &gr); err != nil {
			t.Fatal(err)
		}
		if gr.Spec.Reference == nil || *gr.Spec.Reference != (sourcev1.GitRepositoryRef{Name: "refs/tags/v1.0.0"}) || gr.Status.Artifact == nil || gr.Status.Artifact.Revision != want {
			t.Fatalf("GitRepository after sync --serve of a tag: ref %+v artifact %+v, want %s", gr.Spec.Reference, gr.Status.Artifact, want)
		}
		var cm corev1.ConfigMap
		if err := g.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "instance-app"}, &cm); err != nil || cm.Data["layout"] != "tagged" {
			t.Fatalf("the tag's ConfigMap: %v %v", err, cm.Data)
		}
	})
}
