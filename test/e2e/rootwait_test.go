//go:build e2e

package e2e

// Issue 45, item 4: a root with wait: true is no deadlock by itself.
// kustomize-controller leaves the Kustomization out of its own health
// check (kustomize-controller v1.9.5, kustomization_controller.go
// checkHealth: the object being reconciled is removed from the set it
// waits for), so a root that waits and applies a child nothing makes
// depend on it becomes Ready. check must not fail it; with a child that
// depends on the root, it must ([root-wait]).

import (
	"strings"
	"testing"
	"time"
)

// rootWaitRepo is a root rootwait (wait: true) that applies clusters/dev:
// itself, its source and a child rootwait-apps; dependsOn is the child's
// dependsOn block ("" for none).
func rootWaitRepo(url, dependsOn string) map[string]string {
	return map[string]string{
		"clusters/dev/sync.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: rootwait\n  namespace: flux-system\nspec:\n  interval: 10m\n  ref:\n    branch: main\n  url: " + url + "\n" +
			"---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: rootwait\n  namespace: flux-system\nspec:\n  interval: 10m\n  retryInterval: 5s\n  timeout: 2m\n  path: ./clusters/dev\n  prune: true\n  wait: true\n  sourceRef:\n    kind: GitRepository\n    name: rootwait\n",
		"clusters/dev/apps.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: rootwait-apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  retryInterval: 5s\n  path: ./apps\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: rootwait\n" + dependsOn,
		"apps/config.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rootwait\n  namespace: flux-system\ndata:\n  k: v\n",
	}
}

func TestCheckAgreesOnRootWait(t *testing.T) {
	ensureFlux(t)
	ctx := timeoutCtx(t, 4*time.Minute)
	repo, _, err := suite.git.CreateRepo(ctx, "rootwait", "")
	if err != nil {
		t.Fatal(err)
	}
	files := rootWaitRepo(repo.URL, "")
	sha, err := repo.Commit(ctx, "", files, "root wait fixture")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, files)

	// Offline: nothing depends on the root, so its wait is no deadlock.
	c := bootstrapJSON(t, "check", "--repo", dir, "--env", "dev", "--root", "rootwait", "--no-compare", "--flux-version", "v2.9.5")
	if g := c.report.check("check.graph"); c.code != 0 || !strings.HasPrefix(g, "pass") {
		t.Fatalf("check of a waiting root nothing depends on: exit %d, check.graph %q; want exit 0 and pass\n%s", c.code, g, c)
	}
	// The negative control: a child that depends on the root deadlocks it.
	dep := rootWaitRepo(repo.URL, "  dependsOn:\n    - name: rootwait\n")
	ddir := t.TempDir()
	writeFiles(t, ddir, dep)
	d := bootstrapJSON(t, "check", "--repo", ddir, "--env", "dev", "--root", "rootwait", "--no-compare", "--flux-version", "v2.9.5")
	if g := d.report.check("check.graph"); d.code != 1 || !strings.HasPrefix(g, "fail") || !strings.Contains(g, "root-wait") {
		t.Fatalf("check of a waiting root a child depends on: exit %d, check.graph %q; want exit 1 and [root-wait]\n%s", d.code, g, d)
	}

	// The real controller: the waiting root becomes Ready at the commit.
	rev := repo.Revision(sha)
	applyRootAndWait(ctx, t, "rootwait", repo.URL, "./clusters/dev", true, rev, map[string]string{"rootwait-apps": "./apps"}, nil)
	t.Logf("check and kustomize-controller v1.9.5 agree: a root with wait: true that nothing depends on is Ready at %s", rev)
}
