package fluxrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
