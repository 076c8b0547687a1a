package patches

import (
	"context"
	"os"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/homelab-ops/bootstrap/pkg/components"
)

// TestApplyMatchesKustomizeBuild: applying patches one at a time gives what
// `kustomize build` of one kustomization listing them all gives.
func TestApplyMatchesKustomizeBuild(t *testing.T) {
	t.Parallel()
	r, err := components.Generate(context.Background(), components.DefaultOptions("v2.4.0"))
	if err != nil {
		t.Fatal(err)
	}
	const dir = "../../internal/customize/testdata/overlays/later-disable"
	ov, err := LoadOverlay(os.DirFS(dir), dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Apply(r.YAML, ov)
	if err != nil {
		t.Fatal(err)
	}

	fsys := filesys.MakeFsInMemory()
	k, _ := os.ReadFile(dir + "/kustomization.yaml")
	p, _ := os.ReadFile(dir + "/strict.yaml")
	k = append(k, []byte("resources:\n  - components.yaml\n")...)
	for name, data := range map[string][]byte{"/kustomization.yaml": k, "/strict.yaml": p, "/components.yaml": r.YAML} {
		if err := fsys.WriteFile(name, data); err != nil {
			t.Fatal(err)
		}
	}
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, "/")
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	if string(got.YAML) != string(want) {
		t.Errorf("patch-by-patch apply differs from kustomize build (%d vs %d bytes)", len(got.YAML), len(want))
	}
	if len(got.Patches) != 2 || len(got.Patches[0].Changed) != 1 || len(got.Patches[1].Changed) != 1 {
		t.Errorf("each patch should change kustomize-controller once: %+v", got.Patches)
	}
}
