//go:build e2e

package e2e

// A root declared on the command line, end to end: a repository that
// commits no root Kustomization and no FluxInstance (clusters/dev holds the
// apps only), brought up with `bootstrap sync --source-kind GitRepository
// --source-url URL`. sync creates the source and the root as declared
// (flux-operator's sync template, as for a FluxInstance where no operator
// runs), proves the root at the source's revision, and converge walks
// what it applies. The same flags on a repository that renders its root
// are refused before anything is read from the cluster.

import (
	"strings"
	"testing"
	"time"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/rootsync"
)

func TestCommandLineRoot(t *testing.T) {
	ctx := timeoutCtx(t, 8*time.Minute)
	ensureFlux(t)
	name := freshRepoName("layout-cmdline")
	url := suite.git.URL + "/" + name + ".git"
	dir := t.TempDir()
	files := map[string]string{
		"clusters/dev/apps.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: cmdline-apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./apps\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
		"apps/config.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cmdline-config\n  namespace: default\ndata:\n  from: the command line's root\n",
	}
	writeFiles(t, dir, files)
	repo, sha, err := suite.git.CreateRepo(ctx, name, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	rev := repo.Revision(sha)

	r := bootstrapJSON(t, "sync", "--repo", dir, "--env", "dev", "--source-kind", "GitRepository", "--source-url", url, "--timeout", "3m")
	if r.code != 0 {
		t.Fatalf("sync of a root declared on the command line: want exit 0\n%s\nstderr:\n%s", r, r.stderr)
	}
	if c := r.report.check(rootsync.GateSource.ID); !strings.HasPrefix(c, "pass") || !strings.Contains(c, url) {
		t.Errorf("sync.source: %s", c)
	}
	if c := r.report.check(rootsync.GateRootApplied.ID); !strings.HasPrefix(c, "pass") || !strings.Contains(c, sha) {
		t.Errorf("sync.root-applied at %s: %s", rev, c)
	}
	if c := r.report.check("converge.node/flux-system/cmdline-apps"); !strings.HasPrefix(c, "pass") {
		t.Errorf("converge.node/flux-system/cmdline-apps: %s", c)
	}
	var src sourcev1.GitRepository
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxNS}, &src); err != nil {
		t.Fatal(err)
	}
	if src.Spec.URL != url || src.Spec.Reference == nil || src.Spec.Reference.Name != "refs/heads/main" {
		t.Errorf("GitRepository %s/%s: url %s ref %+v, want %s at refs/heads/main", fluxNS, fluxNS, src.Spec.URL, src.Spec.Reference, url)
	}
	var cm corev1.ConfigMap
	if err := suite.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "cmdline-config"}, &cm); err != nil {
		t.Errorf("the apps the root applies: %v", err)
	}
	t.Cleanup(func() { _ = suite.client.Delete(timeoutCtx(t, 30*time.Second), &cm) })

	// status takes the same declaration (the repository has no root).
	if st := bootstrapJSON(t, "status", "--repo", dir, "--env", "dev", "--source-url", url); st.code != 0 {
		t.Errorf("status of the command-line root: want exit 0\n%s", st)
	}

	// Sync again: the same declared objects, nothing new to prove wrong.
	if again := bootstrapJSON(t, "sync", "--repo", dir, "--env", "dev", "--source-kind", "GitRepository", "--source-url", url, "--timeout", "3m"); again.code != 0 {
		t.Errorf("a second sync: want exit 0\n%s", again)
	}
}
