package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestCompareTrees: the -check comparison finds a changed, a missing and an
// extra file, ignores the hand-written README.md, and passes identical trees.
func TestCompareTrees(t *testing.T) {
	gen := map[string]string{".stamp": "m@v h1:x v2.4.0\n", "v2.4.0/rbac.yaml": "a", "v2.4.0/policies.yaml": "b"}
	tests := []struct {
		name      string
		committed map[string]string
		want      []string
	}{
		{"identical", map[string]string{".stamp": "m@v h1:x v2.4.0\n", "v2.4.0/rbac.yaml": "a", "v2.4.0/policies.yaml": "b", "README.md": "hand-written"}, nil},
		{"edited", map[string]string{".stamp": "m@v h1:x v2.4.0\n", "v2.4.0/rbac.yaml": "a ", "v2.4.0/policies.yaml": "b"}, []string{"v2.4.0/rbac.yaml: content differs"}},
		{"missing and extra", map[string]string{".stamp": "m@v h1:x v2.4.0\n", "v2.4.0/rbac.yaml": "a", "v2.3.0/policies.yaml": "b"},
			[]string{"v2.3.0/policies.yaml: not generated (extra file)", "v2.4.0/policies.yaml: missing"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, got := writeTree(t, gen), writeTree(t, tt.committed)
			diffs, err := compareTrees(want, got)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(diffs, tt.want) {
				t.Fatalf("diffs = %q, want %q", diffs, tt.want)
			}
		})
	}
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
