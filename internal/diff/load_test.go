package diff

import (
	"os"
	"path/filepath"
	"testing"
)

// setsOpenAPI decides whether the two revisions may load concurrently.
func TestDiffSetsOpenAPI(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  bool
	}{
		{"none", map[string]string{"apps/kustomization.yaml": "resources: [a.yaml]\n", "apps/a.yaml": "openapi: {path: x}\n"}, false},
		{"kustomization.yaml", map[string]string{"apps/kustomization.yaml": "resources: [a.yaml]\nopenapi:\n  path: schema.json\n"}, true},
		{"Kustomization", map[string]string{"deep/er/Kustomization": "openapi: {version: v1.21.2}\n"}, true},
		{"kustomization.yml", map[string]string{"k/kustomization.yml": "openapi: {path: s.json}\n"}, true},
		{"under .git", map[string]string{".git/kustomization.yaml": "openapi: {path: s.json}\n"}, false},
		{"not YAML", map[string]string{"k/kustomization.yaml": "openapi: [\n"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, s := range c.files {
				p = filepath.Join(dir, p)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := setsOpenAPI(dir); got != c.want {
				t.Errorf("setsOpenAPI = %t, want %t", got, c.want)
			}
		})
	}
}
