package converge

import (
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestPlanned: a dry run's plan is one optional converge.node skip per node
// of the graph, in walk order, each "planned: step i of n" with its level;
// the dry run is not made incomplete by it.
func TestPlanned(t *testing.T) {
	root := NodeID{Namespace: "flux-system", Name: "flux-system"}
	p := &Phase{g: fluxgraph.New([]*kustomizev1.Kustomization{ks("flux-system"), ks("a", "flux-system"), ks("b", "a")}, root, "flux-system")}
	got := p.Planned()
	want := []struct{ id, msg string }{
		{"converge.node/flux-system/flux-system", "planned: step 1 of 3, level 0"},
		{"converge.node/flux-system/a", "planned: step 2 of 3, level 1"},
		{"converge.node/flux-system/b", "planned: step 3 of 3, level 2"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d gates, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		c := got[i]
		if c.ID != w.id || c.Verdict != verify.Skip || !c.Optional || !strings.HasPrefix(c.Message, w.msg) {
			t.Errorf("gate %d: %s %s optional=%t %q; want %s skip optional %q…", i, c.ID, c.Verdict, c.Optional, c.Message, w.id, w.msg)
		}
	}
	if verify.Blocks(got...) {
		t.Error("the plan blocks the run")
	}
}
