//go:build e2e

package e2e

// Issue 45 items 1 and 5, against the real kustomize-controller v1.9.5:
//   - a remote resource is a hole for check (left out, one [unread]
//     warning, the rest checked), and the controller fetches it (remote
//     bases are allowed unless --no-remote-bases): served here from a local
//     HTTP server, never the internet;
//   - a directory without a kustomization.yaml is applied whole by the
//     build the controller generates, so an object of a subdirectory that
//     is another Kustomization's path is applied by both: check's
//     [two-appliers], and both Kustomizations' inventories list it.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestCheckAgreesOnRemoteResource(t *testing.T) {
	ensureFlux(t)
	ctx := timeoutCtx(t, 4*time.Minute)
	remote := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: holes-remote\n  namespace: flux-system\ndata:\n  from: remote\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/crds.yaml" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(remote))
	}))
	t.Cleanup(srv.Close)
	repo, _, err := suite.git.CreateRepo(ctx, "holes", "")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"clusters/dev/sync.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: holes\n  namespace: flux-system\nspec:\n  interval: 10m\n  ref:\n    branch: main\n  url: " + repo.URL + "\n" +
			"---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: holes\n  namespace: flux-system\nspec:\n  interval: 10m\n  retryInterval: 5s\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: holes\n",
		// The root directory lists a remote file: a wall before issue 45.
		"clusters/dev/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - sync.yaml\n  - " + srv.URL + "/crds.yaml\n  - apps.yaml\n",
		"clusters/dev/apps.yaml":          "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: holes-apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  retryInterval: 5s\n  path: ./apps\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: holes\n  postBuild:\n    substitute:\n      greeting: hello\n",
		"apps/config.yaml":                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: holes-apps\n  namespace: flux-system\ndata:\n  greeting: \"${greeting}\"\n",
	}
	sha, err := repo.Commit(ctx, "", files, "remote resource fixture")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, files)

	// Offline: the remote file is a hole; the child below is checked.
	c := bootstrapJSON(t, "check", "--repo", dir, "--env", "dev", "--root", "holes", "--no-compare")
	r := c.report.check("check.render")
	if c.code != 0 || !strings.HasPrefix(r, "warn") || !strings.Contains(r, srv.URL+"/crds.yaml") || !strings.HasPrefix(c.report.check("check.substitution/flux-system/holes-apps"), "pass") {
		t.Fatalf("check of a root listing a remote file: exit %d, check.render %q; want exit 0, an [unread] warning naming the URL and holes-apps checked\n%s", c.code, r, c)
	}
	// The negative control: below the hole a defect is still found.
	broken := map[string]string{}
	for k, v := range files {
		broken[k] = v
	}
	broken["apps/config.yaml"] = strings.Replace(files["apps/config.yaml"], "${greeting}", "${greting}", 1)
	bdir := t.TempDir()
	writeFiles(t, bdir, broken)
	if b := bootstrapJSON(t, "check", "--repo", bdir, "--env", "dev", "--root", "holes", "--no-compare"); b.code != 1 || !strings.Contains(b.report.check("check.substitution/flux-system/holes-apps"), "${greting}") {
		t.Fatalf("check below the hole with an undefined variable: exit %d; want exit 1 naming ${greting}\n%s", b.code, b)
	}

	// The real controller fetches the remote file and applies it.
	applyRootAndWait(ctx, t, "holes", repo.URL, "./clusters/dev", false, repo.Revision(sha), map[string]string{"holes-apps": "./apps"}, nil)
	cm, err := suite.cs.CoreV1().ConfigMaps(fluxNS).Get(ctx, "holes-remote", metav1.GetOptions{})
	if err != nil || cm.Data["from"] != "remote" {
		t.Fatalf("the remote ConfigMap as kustomize-controller applied it: %v %v; want data from=remote", cm, err)
	}
	t.Logf("check leaves %s/crds.yaml out (one [unread] warning) and checks the rest; kustomize-controller v1.9.5 fetched and applied it at %s", srv.URL, repo.Revision(sha))
}

func TestCheckAgreesOnTwoAppliers(t *testing.T) {
	ensureFlux(t)
	ctx := timeoutCtx(t, 4*time.Minute)
	repo, _, err := suite.git.CreateRepo(ctx, "twoapp", "")
	if err != nil {
		t.Fatal(err)
	}
	// clusters/dev has no kustomization.yaml: the root's generated build
	// includes clusters/dev/settings, the path of twoapp-settings.
	files := map[string]string{
		"clusters/dev/sync.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: twoapp\n  namespace: flux-system\nspec:\n  interval: 10m\n  ref:\n    branch: main\n  url: " + repo.URL + "\n" +
			"---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: twoapp\n  namespace: flux-system\nspec:\n  interval: 10m\n  retryInterval: 5s\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: twoapp\n",
		"clusters/dev/settings.yaml":          "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: twoapp-settings\n  namespace: flux-system\nspec:\n  interval: 10m\n  retryInterval: 5s\n  path: ./clusters/dev/settings\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: twoapp\n  postBuild:\n    substitute:\n      email: ops@example.org\n",
		"clusters/dev/settings/settings.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: twoapp-settings\n  namespace: flux-system\ndata:\n  email: \"${email}\"\n",
	}
	sha, err := repo.Commit(ctx, "", files, "two appliers fixture")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, files)

	c := bootstrapJSON(t, "check", "--repo", dir, "--env", "dev", "--root", "twoapp", "--no-compare")
	g := c.report.check("check.graph")
	if c.code != 1 || !strings.HasPrefix(g, "fail") || !strings.Contains(g, "two-appliers") || !strings.Contains(c.String(), "clusters/dev has no kustomization.yaml") {
		t.Fatalf("check of a generated build applying another path's object: exit %d, check.graph %q; want exit 1, [two-appliers] naming clusters/dev's missing kustomization.yaml\n%s", c.code, g, c)
	}
	// The negative control: the root directory lists only its own files.
	fixed := map[string]string{"clusters/dev/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - sync.yaml\n  - settings.yaml\n"}
	for k, v := range files {
		fixed[k] = v
	}
	fdir := t.TempDir()
	writeFiles(t, fdir, fixed)
	if f := bootstrapJSON(t, "check", "--repo", fdir, "--env", "dev", "--root", "twoapp", "--no-compare"); f.code != 0 || strings.Contains(f.String(), "two-appliers") {
		t.Fatalf("check with the kustomization.yaml: exit %d; want exit 0 and no [two-appliers]\n%s", f.code, f)
	}

	// The real controller: both Kustomizations apply the ConfigMap (each
	// inventory lists it) — the two appliers check names.
	rev := repo.Revision(sha)
	const entry = fluxNS + "_twoapp-settings__ConfigMap"
	applyRootAndWait(ctx, t, "twoapp", repo.URL, "./clusters/dev", false, rev, map[string]string{"twoapp-settings": "./clusters/dev/settings"}, func(k *kustomizev1.Kustomization) (bool, string) {
		var ids []string
		if k.Status.Inventory != nil {
			for _, e := range k.Status.Inventory.Entries {
				ids = append(ids, e.ID)
			}
		}
		return slices.Contains(ids, entry), "inventory " + strings.Join(ids, ", ")
	})
	t.Logf("check's [two-appliers] and kustomize-controller v1.9.5 agree: ConfigMap %s is in the inventories of twoapp and twoapp-settings at %s", entry, rev)
}

// applyRootAndWait creates the GitRepository name (url) and the root
// Kustomization name applying path (wait as given), removes them and the
// children (name: path) at cleanup — their finalizers prune what they
// applied — and waits until the root and each child are Ready at rev and
// also (when not nil) hold.
func applyRootAndWait(ctx context.Context, t *testing.T, name, url, path string, wait bool, rev string, children map[string]string, also func(*kustomizev1.Kustomization) (bool, string)) {
	t.Helper()
	root := kustomization(name, path)
	root.Spec.SourceRef.Name = name
	if wait {
		root.Spec.Wait = true
		root.Spec.Timeout = &metav1.Duration{Duration: 2 * time.Minute}
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var objs []client.Object
		for c, p := range children {
			objs = append(objs, kustomization(c, p))
		}
		for _, o := range append(objs, root.DeepCopy(), gitRepository(name, "")) {
			_ = suite.client.Delete(cctx, o)
		}
	})
	for _, o := range []client.Object{gitRepository(name, url), root} {
		if err := suite.client.Create(ctx, o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
	names := []string{name}
	for c := range children {
		names = append(names, c)
	}
	for _, n := range names {
		waitFor(ctx, t, suite.client, &kustomizev1.KustomizationList{}, fluxNS, n, func(k *kustomizev1.Kustomization) (bool, string) {
			st, reason, msg, cur := readyStatus(k.Generation, k.Status.Conditions)
			ok, more := true, ""
			if also != nil {
				ok, more = also(k)
			}
			return st == metav1.ConditionTrue && cur && k.Status.LastAppliedRevision == rev && ok, reason + ": " + msg + " " + more
		})
	}
}
