package diff

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/provider"

	"github.com/homelab-ops/bootstrap/internal/benchshape"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// render takes an object without "$" as it is once another object of its
// Kustomization went through the controller's substitution: this holds
// every such object of the fixtures and the real-shaped repository to it —
// what kustomize-controller's own call returns for it reads (toUnstructured)
// as the object itself does.
func TestPlainObjectsAsSubstituted(t *testing.T) {
	t.Parallel()
	shape := t.TempDir()
	if _, err := benchshape.Write(shape); err != nil {
		t.Fatal(err)
	}
	repos := []string{shape, filepath.Join("..", "..", "testdata", "check", "clean")}
	layouts, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "layouts", "*"))
	repos = append(repos, layouts...)
	compared := 0
	for _, repo := range repos {
		roots, _, err := fluxrepo.Discover(repo, fluxrepo.Options{})
		if err != nil {
			continue // a layout that is broken on purpose
		}
		for _, root := range roots {
			env, err := fluxrepo.Load(fluxrepo.Options{Repo: repo, Path: root.Path, Namespace: root.Namespace, RootName: root.Name, KeepGoing: true, Holes: true})
			if err != nil {
				continue
			}
			for _, k := range env.Kustomizations {
				if !k.Substitutes() {
					continue
				}
				kc := k.DeepCopy()
				for i := range kc.Spec.PostBuild.SubstituteFrom {
					kc.Spec.PostBuild.SubstituteFrom[i].Optional = true
				}
				uobj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kc)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range k.Resources {
					if fluxrepo.WritesDollar(r) || fluxrepo.SubstitutionDisabled(r) {
						continue
					}
					s, err := fluxkustomize.SubstituteVariables(context.Background(), fluxrepo.DataClient{Env: env}, unstructured.Unstructured{Object: uobj}, r.DeepCopy())
					if err != nil {
						continue // the Kustomization fails: render says so before any plain object
					}
					want, werr := toUnstructured(s)
					got, gerr := toUnstructured(r)
					if werr != nil || gerr != nil || !reflect.DeepEqual(got.Object, want.Object) {
						t.Fatalf("%s %s: as built %v (%v), as the controller substitutes it %v (%v)", repo, r.CurId(), got, gerr, want, werr)
					}
					compared++
				}
			}
		}
	}
	if compared < 100 {
		t.Fatalf("%d objects compared: want the real shape's", compared)
	}
	t.Logf("%d objects without \"$\" compared", compared)
}

// The values a JSON round trip could change, each as the controller's
// substitution returns it and as the object itself reads.
func TestPlainValuesAsSubstituted(t *testing.T) {
	t.Parallel()
	y := `apiVersion: v1
kind: ConfigMap
metadata:
  name: edge
  namespace: apps
  labels:
    enabled: true
    n: 1
  annotations:
    float: 1.0
data:
  yes: "yes"
  on: on
  hex: 0x10
  octal: 0o17
  big: 12345678901234567890
  neg: -0.0
  exp: 1e3
  nul: null
  tilde: ~
  empty: ""
  block: |
    line one
      indented \ backslash \\ and "quotes"
    last
  folded: >
    folded
    text
  unicode: "é ü 日本 \u00e9 \t tab"
  date: 2026-12-07
  list: [1, "2", 3.5, true, null, {a: b}]
  map: {}
  seq: []
`
	r, err := provider.NewDefaultDepProvider().GetResourceFactory().FromBytes([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	k := map[string]any{"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": "apps", "namespace": "flux-system"},
		"spec":     map[string]any{"postBuild": map[string]any{"substitute": map[string]any{"A": "x"}}}}
	s, err := fluxkustomize.SubstituteVariables(context.Background(), fluxrepo.DataClient{Env: &fluxrepo.Env{}}, unstructured.Unstructured{Object: k}, r.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	want, werr := toUnstructured(s)
	got, gerr := toUnstructured(r)
	if werr != nil || gerr != nil || !reflect.DeepEqual(got.Object, want.Object) {
		t.Fatalf("as built %v (%v), as the controller substitutes it %v (%v)", got, gerr, want, werr)
	}
}

// The trees diff loads link the checkout's files where they hold the
// commit's content (gitrev), and a load writes into its tree — a remote
// entry left out offline, a repair of a missing entry — by replacing a
// file, never through it: the checkout is as it was.
func TestDiffLeavesCheckoutAlone(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "testdata", "layouts", "taskfile"))); err != nil {
		t.Fatal(err)
	}
	const kfile = "kubernetes/apps/default/echo/app/kustomization.yaml"
	commits := commitEach(t, dir,
		func(edit func(file, old, new string)) {
			edit(kfile, "resources:\n", "resources:\n  - https://git.example.invalid/remote/base?ref=v1\n  - ./missing.yaml\n")
		},
		func(edit func(file, old, new string)) {
			edit(kfile, "resources:\n", "resources:\n  - ./also-missing.yaml\n")
		})
	before := map[string]string{}
	snapshot := func(f func(rel, content string)) {
		t.Helper()
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				if d != nil && d.Name() == ".git" {
					return filepath.SkipDir
				}
				return err
			}
			b, err := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			f(rel, string(b))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	snapshot(func(rel, content string) { before[rel] = content })
	if _, err := Run(context.Background(), Options{Repo: dir, Base: commits[0], Head: commits[1], AdoptRoot: true}); err != nil {
		t.Fatal(err)
	}
	n := 0
	snapshot(func(rel, content string) {
		n++
		if before[rel] != content {
			t.Errorf("%s changed by the diff:\n%s", rel, content)
		}
	})
	if n != len(before) {
		t.Errorf("%d files after the diff, %d before", n, len(before))
	}
}
