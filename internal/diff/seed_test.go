package diff

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// gitRepo makes a repository in a temporary directory with one commit per
// tree: each tree is a directory whose files are copied over the previous
// commit's (a file holding "DELETE" removes it), then edit (if not nil)
// runs on the work tree before the commit.
func gitRepo(t *testing.T, trees []string, edit func(dir string, commit int)) string {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	for i, tree := range trees {
		err := filepath.WalkDir(tree, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(tree, p)
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			dst := filepath.Join(dir, rel)
			if string(b) == "DELETE\n" {
				return os.Remove(dst)
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.WriteFile(dst, b, 0o644)
		})
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			edit(dir, i)
		}
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Commit("commit "+filepath.Base(tree), &git.CommitOptions{All: true, Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1700000000+int64(i), 0)}}); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// replaceIn edits one file of the work tree.
func replaceIn(t *testing.T, dir, file, old, new string) {
	t.Helper()
	p := filepath.Join(dir, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), old) {
		t.Fatalf("%s lacks %q", file, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDiffSeedWindow is the seed's incident: commit 2 moves Cilium's API
// server address into the cluster-vars knob K8S_SERVICE_HOST (applied by
// Kustomization vars) and reads it in the HelmRelease (applied by infra,
// which substitutes from cluster-vars) with no dependsOn between them. The
// final render is byte-identical; the window is not: the unquoted
// ${K8S_SERVICE_HOST} substituted with "" (not strict) is YAML null.
func TestDiffSeedWindow(t *testing.T) {
	seed := filepath.Join("testdata", "seed")
	for _, tc := range []struct {
		name      string
		dependsOn bool
		self      bool // cluster-vars applied by infra itself
		newObject bool // cluster-vars is new at head
		// rootApplies: the root applies cluster-vars (clusters/dev), as it
		// applies infra; newRef: infra substitutes from it only at head.
		rootApplies, newRef bool
		flux                string
		want                []string // in the text output
		wantNot             []string
	}{
		{name: "fail open (Flux v2.8.5)", flux: "v2.8.5",
			want: []string{"WINDOW if flux-system/infra reconciles before flux-system/vars: HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium renders `k8sServiceHost: null` (fail open on this release) → Helm upgrade (values)",
				"Kustomization flux-system/vars (prune: true): 1 changed", "~ ConfigMap flux-system/cluster-vars: updated", "+  K8S_SERVICE_HOST: 10.0.0.1"},
			wantNot: []string{"Kustomization flux-system/infra (prune"}},
		{name: "strict (Flux v2.9.5)", flux: "v2.9.5",
			want: []string{"WINDOW if flux-system/infra reconciles before flux-system/vars: Kustomization flux-system/infra fails to build (strict): post build failed for 'HelmRelease/kube-system/cilium'"}},
		{name: "applied by its reader: one reconcile late", self: true, flux: "v2.8.5",
			want: []string{"WINDOW when flux-system/infra reconciles, it substitutes before it applies ConfigMap/flux-system/cluster-vars itself: HelmRelease.helm.toolkit.fluxcd.io kube-system/cilium renders `k8sServiceHost: null`"}},
		{name: "the substituteFrom object is new at head", newObject: true, flux: "v2.8.5",
			want: []string{"WINDOW if flux-system/infra reconciles before flux-system/vars: Kustomization flux-system/infra fails to build: post build failed for", `substitute from 'ConfigMap/cluster-vars' error: configmaps "cluster-vars" not found`}},
		// Issue 56 item 3: one apply creates both — kustomize-controller's
		// ssa ApplyAll (fluxcd/pkg/ssa v0.76.2 manager_apply.go) applies
		// the objects one by one in ReconcileOrder (sort.go: ConfigMap and
		// Secret among the first kinds, custom resources after them), so
		// infra's new substituteFrom lands after cluster-vars: no window.
		{name: "the root applies the new reference and its object together: no window", rootApplies: true, newRef: true, flux: "v2.9.5",
			wantNot: []string{"WINDOW"}},
		{name: "the root applies both, the reference is old: a window", rootApplies: true, flux: "v2.8.5",
			want: []string{"WINDOW if flux-system/infra reconciles before flux-system/flux-system"}},
		{name: "dependsOn vars: no window", dependsOn: true, flux: "v2.8.5",
			want:    []string{"~ ConfigMap flux-system/cluster-vars: updated"},
			wantNot: []string{"WINDOW", "Kustomization flux-system/infra (prune"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := gitRepo(t, []string{filepath.Join(seed, "base"), filepath.Join(seed, "head")}, func(dir string, i int) {
				if tc.dependsOn && i == 0 {
					replaceIn(t, dir, "clusters/dev/infra.yaml", "  postBuild:", "  dependsOn:\n    - name: vars\n  postBuild:")
				}
				if tc.newObject && i == 0 {
					if err := os.Remove(filepath.Join(dir, "vars", "cluster-vars.yaml")); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, "vars", "placeholder.yaml"), []byte("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: placeholder\n  namespace: flux-system\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if tc.rootApplies {
					if err := os.Rename(filepath.Join(dir, "vars", "cluster-vars.yaml"), filepath.Join(dir, "clusters", "dev", "cluster-vars.yaml")); err != nil {
						t.Fatal(err)
					}
					if err := os.Remove(filepath.Join(dir, "clusters", "dev", "vars.yaml")); err != nil && i == 0 {
						t.Fatal(err)
					}
					if tc.newRef && i == 1 {
						// The head tree holds no infra.yaml: the base's as committed.
						b, err := os.ReadFile(filepath.Join(seed, "base", "clusters", "dev", "infra.yaml"))
						if err != nil {
							t.Fatal(err)
						}
						if err := os.WriteFile(filepath.Join(dir, "clusters", "dev", "infra.yaml"), b, 0o644); err != nil {
							t.Fatal(err)
						}
					}
					if tc.newRef && i == 0 {
						replaceIn(t, dir, "clusters/dev/infra.yaml", "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n", "")
						if err := os.Remove(filepath.Join(dir, "clusters", "dev", "cluster-vars.yaml")); err != nil {
							t.Fatal(err)
						}
					}
				}
				if tc.self {
					if err := os.Rename(filepath.Join(dir, "vars", "cluster-vars.yaml"), filepath.Join(dir, "infra", "cluster-vars.yaml")); err != nil {
						t.Fatal(err)
					}
					if err := os.Remove(filepath.Join(dir, "clusters", "dev", "vars.yaml")); err != nil && i == 0 {
						t.Fatal(err)
					}
				}
			})
			res, err := Run(context.Background(), Options{Repo: repo, Base: "HEAD~1", Head: "HEAD", FluxVersion: tc.flux})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := WriteText(&out, res); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("want %q in:\n%s", w, out.String())
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(out.String(), w) {
					t.Errorf("do not want %q in:\n%s", w, out.String())
				}
			}
			if res.Failed() {
				t.Errorf("Failed() at head: the head builds")
			}
			if t.Failed() || testing.Verbose() {
				t.Log(out.String())
			}
		})
	}
}
