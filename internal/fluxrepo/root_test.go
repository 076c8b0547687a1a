package fluxrepo

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestRootObjectsDeepCopy: the root's objects are as the API machinery
// reads them, so an integer (the bootstrap layout's `replicas: 1`) is an
// int64 and the apply's DeepCopy does not panic on it.
func TestRootObjectsDeepCopy(t *testing.T) {
	t.Parallel()
	e, err := Load(Options{Repo: "../../testdata/layouts/bootstrap", Path: "clusters/staging", Namespace: "flux-system", RootName: "flux-system", KeepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := e.RootObjects()
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range objs {
		if u.GetKind() == "Deployment" {
			if r, _, _ := unstructured.NestedInt64(u.DeepCopy().Object, "spec", "replicas"); r != 1 {
				t.Errorf("Deployment %s: replicas %d, want 1", u.GetName(), r)
			}
			return
		}
	}
	t.Fatal("no Deployment in the bootstrap layout's root")
}

// TestBootstrapPlaceholder: flux bootstrap's placeholder (gotk-sync.yaml
// read by the root directory's build, holding no object) declares the root
// flux bootstrap writes there, in the shape of flux2's
// pkg/manifestgen/sync.Generate (v2.9.x; cmd/flux/bootstrap_git.go names
// both objects after --namespace): Kustomization interval 10m, path
// ./<path>, prune true, sourceRef GitRepository <ns>; one note says so.
// A gotk-sync.yaml holding an object is no placeholder, and --source-url
// declares the root instead.
func TestBootstrapPlaceholder(t *testing.T) {
	t.Parallel()
	const repo = "../../testdata/layouts/placeholder"
	e, err := Load(Options{Repo: repo, Path: "clusters/staging"})
	if err != nil {
		t.Fatal(err)
	}
	r := e.Root
	if e.Origin.Layout != LayoutBootstrap || r == nil || !r.Built || r.Ref() != "flux-system/flux-system" || r.Location.File != "clusters/staging/flux-system/gotk-sync.yaml" {
		t.Fatalf("origin %+v, root %+v", e.Origin, r)
	}
	if r.Spec.Interval.Duration.String() != "10m0s" || r.Spec.Path != "./clusters/staging" || !r.Spec.Prune || r.Spec.Wait ||
		r.Spec.SourceRef.Kind != "GitRepository" || r.Spec.SourceRef.Name != "flux-system" || r.Spec.SourceRef.Namespace != "" {
		t.Fatalf("root spec %+v", r.Spec)
	}
	if e.RootSource == nil || e.RootSource.Ref.String() != "GitRepository/flux-system/flux-system" {
		t.Fatalf("root source %+v", e.RootSource)
	}
	notes := 0
	for _, n := range e.Notes {
		if strings.Contains(n, "flux bootstrap's placeholder") {
			notes++
			if !strings.Contains(n, "--source-url URL") {
				t.Errorf("the note has no hint: %s", n)
			}
		}
	}
	if notes != 1 {
		t.Fatalf("%d notes on the placeholder, want 1: %v", notes, e.Notes)
	}

	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(repo)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clusters/staging/flux-system/gotk-sync.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: flux-system\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if e, err := Load(Options{Repo: dir, Path: "clusters/staging"}); err != nil || e.Root != nil || e.Origin.Layout != LayoutRepository {
		t.Fatalf("an object in gotk-sync.yaml: err %v, origin %+v, root %v", err, e.Origin, e.Root)
	}

	// Review item 14: bootstrapped with --namespace flux, the pull
	// secret is still flux-system: flux bootstrap's --secret-name
	// defaults to the constant default namespace, not --namespace (flux2
	// v2.9.x cmd/flux/bootstrap.go:137 rootArgs.defaults.Namespace;
	// bootstrap_git.go:311 Secret: bootstrapArgs.secretName).
	dir = t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(repo)); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "clusters/staging/flux-system"), filepath.Join(dir, "clusters/staging/flux")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clusters/staging/flux/kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gotk-sync.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if e, err := Load(Options{Repo: dir, Path: "clusters/staging", Namespace: "flux"}); err != nil || e.Origin.Layout != LayoutBootstrap || e.Origin.Sync.Name != "flux" || e.Origin.Sync.PullSecret != "flux-system" {
		t.Fatalf("--namespace flux: err %v, origin %+v, sync %+v", err, e.Origin, e.Origin.Sync)
	}

	e, err = Load(Options{Repo: repo, Path: "clusters/staging", Sync: &Sync{Kind: "GitRepository", URL: "https://git.example.invalid/fork.git", Ref: "refs/heads/main"}})
	if err != nil || e.Origin.Layout != LayoutCommandLine || e.Root == nil {
		t.Fatalf("--source-url: err %v, origin %+v", err, e.Origin)
	}
}

// TestAdoptRoot: with no --root (Options.AdoptRoot), a path that renders
// no flux-system/flux-system and exactly one self-applying root
// Kustomization (spec.path the path, its GitRepository or OCIRepository
// rendered there: the Taskfile layout's flux-system/cluster) is checked
// as that root, said in Origin.Adopted and a note. Each condition is
// load-bearing: without AdoptRoot, with two such Kustomizations, or with
// the source not rendered, the root name stays the default and the
// loader's refusal names the candidates.
func TestAdoptRoot(t *testing.T) {
	t.Parallel()
	const layout = "../../testdata/layouts/taskfile"
	second := "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: cluster-2\n  namespace: flux-system\nspec:\n  interval: 30m\n  path: ./kubernetes/flux\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: home-kubernetes\n"
	for _, tc := range []struct {
		name  string
		adopt bool
		// old, new edit kubernetes/flux/config/cluster.yaml.
		old, new string
		// root is the root's ref when adopted; err a text of the refusal.
		root, err string
	}{
		{name: "adopted", adopt: true, root: "flux-system/cluster"},
		{name: "--root given", err: "the root Kustomization flux-system/flux-system: kubernetes/flux renders no such Kustomization"},
		{name: "two self-applying", adopt: true, old: "", new: second, err: "it renders Kustomization flux-system/cluster-2, flux-system/cluster, applying kubernetes/flux"},
		{name: "its source not rendered", adopt: true, old: "name: home-kubernetes\n  namespace", new: "name: elsewhere\n  namespace", err: "pass --namespace flux-system --root cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := copyTree(t, layout)
			if tc.old != "" || tc.new != "" {
				edit(t, repo, "kubernetes/flux/config/cluster.yaml", tc.old, tc.new)
			}
			e, err := Load(Options{Repo: repo, Path: "kubernetes/flux", AdoptRoot: tc.adopt, Holes: true, KeepGoing: true})
			if tc.err != "" {
				if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Root == nil || e.Root.Ref() != tc.root || !e.Root.Built || e.Options.RootName != "cluster" || !strings.Contains(e.Origin.Adopted, "the one self-applying root Kustomization kubernetes/flux renders (kubernetes/flux/config/cluster.yaml:") {
				t.Fatalf("root %v, options %s/%s, origin %+v", e.Root, e.Options.Namespace, e.Options.RootName, e.Origin)
			}
			if e.RootSource == nil || e.RootSource.Ref.String() != "GitRepository/flux-system/home-kubernetes" || len(e.Kustomizations) != 3 {
				t.Fatalf("root source %+v, %d Kustomizations, notes %q", e.RootSource, len(e.Kustomizations), e.Notes)
			}
			// Built with the root's own spec: the GitRepository's spec.ignore applied.
			if !slices.Contains(e.Notes, "the root's GitRepository spec.ignore was applied to the copy") {
				t.Errorf("notes %q", e.Notes)
			}
		})
	}
}
