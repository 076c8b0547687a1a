package converge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

func TestWriteGraphFile(t *testing.T) {
	g := chain()
	v := map[NodeID]NodeVerdict{root: {verify.Pass, "converged 1.0s"}, id("a"): {verify.Fail, "failing"}, id("b"): {verify.Skip, "blocked"}}
	dir := t.TempDir()
	for file, want := range map[string][]string{
		"g.md":  {"```mermaid", "flowchart LR", `n0["flux-system/flux-system<br/>pass converged 1.0s"]:::pass`, "n1 --> n2", "classDef fail"},
		"g.mmd": {"flowchart LR", ":::skip"},
		"g.dot": {"digraph converge", `"flux-system/a" -> "flux-system/b";`, `fillcolor="#ffcdd2"`},
	} {
		p := filepath.Join(dir, file)
		if err := WriteGraphFile(p, g, v); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s: want %q in:\n%s", file, w, b)
			}
		}
	}
	if err := WriteGraphFile(filepath.Join(dir, "g.png"), g, v); err == nil || !strings.Contains(err.Error(), ".mmd") {
		t.Fatalf("unknown format: %v", err)
	}
}
