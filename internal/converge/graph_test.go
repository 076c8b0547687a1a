package converge

import (
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
)

var root = NodeID{Namespace: "flux-system", Name: "flux-system"}

func TestGraphHomelabShape(t *testing.T) {
	g := fluxgraph.New([]*kustomizev1.Kustomization{
		ks("apps", "platform"), ks("platform", "flux-system", "cni"), ks("cni", "flux-system"), ks("flux-system"),
	}, root, "flux-system")
	if p := problems(g); len(p) != 0 {
		t.Fatalf("problems: %v", p)
	}
	var order []string
	for _, id := range g.Order {
		order = append(order, id.Name)
	}
	if strings.Join(order, ",") != "flux-system,cni,platform,apps" {
		t.Fatalf("order %v", order)
	}
	if lv := g.Levels(); lv[NodeID{Namespace: "flux-system", Name: "apps"}] != 3 {
		t.Fatalf("levels %v", lv)
	}
	if d := g.Nodes[root].Dependents; len(d) != 2 {
		t.Fatalf("root dependents %v", d)
	}
}

func TestGraphProblems(t *testing.T) {
	cases := []struct {
		name string
		ks   []*kustomizev1.Kustomization
		want []string
	}{
		{"cycle named", []*kustomizev1.Kustomization{ks("flux-system"), ks("a", "flux-system", "c"), ks("b", "a"), ks("c", "b")},
			[]string{"cycle", "flux-system/a -> flux-system/c -> flux-system/b -> flux-system/a"}},
		{"dangling edge named", []*kustomizev1.Kustomization{ks("flux-system"), ks("a", "flux-system", "ghost")},
			[]string{"flux-system/a depends on flux-system/ghost, which is not in the graph"}},
		{"unreachable node named", []*kustomizev1.Kustomization{ks("flux-system"), ks("a", "flux-system"), ks("island")},
			[]string{"flux-system/island is not reachable from the root"}},
		{"root missing", []*kustomizev1.Kustomization{ks("a")}, []string{"root Kustomization flux-system/flux-system is not in the graph"}},
		{"cross-namespace edge resolved", []*kustomizev1.Kustomization{ks("flux-system"),
			with(ks("a"), func(k *kustomizev1.Kustomization) {
				k.Namespace = "apps"
				k.Spec.DependsOn = []kustomizev1.DependencyReference{{Name: "flux-system", Namespace: "flux-system"}}
			})}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := strings.Join(problems(fluxgraph.New(tc.ks, root, "flux-system")), "\n")
			if len(tc.want) == 0 && p != "" {
				t.Fatalf("want no problem, got %s", p)
			}
			for _, w := range tc.want {
				if !strings.Contains(p, w) {
					t.Fatalf("want %q in:\n%s", w, p)
				}
			}
		})
	}
}
