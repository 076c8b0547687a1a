package fluxgraph

import (
	"fmt"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

var root = NodeID{Namespace: "flux-system", Name: "flux-system"}

// kust is Kustomization ref ("name" in flux-system, "ns/name", or "/name"
// for no namespace) reading GitRepository flux-system, depending on deps
// ("name" or "ns/name").
func kust(ref string, deps ...string) *kustomizev1.Kustomization {
	ns, name, ok := strings.Cut(ref, "/")
	if !ok {
		ns, name = "flux-system", ref
	}
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	k.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: "flux-system", Namespace: "flux-system"}
	for _, d := range deps {
		dns, dname, ok := strings.Cut(d, "/")
		if !ok {
			dns, dname = "", d
		}
		k.Spec.DependsOn = append(k.Spec.DependsOn, kustomizev1.DependencyReference{Name: dname, Namespace: dns})
	}
	return k
}

func names(ids []NodeID) string {
	s := make([]string, 0, len(ids))
	for _, id := range ids {
		s = append(s, id.String())
	}
	return strings.Join(s, ",")
}

func edges(es []Edge) string {
	s := make([]string, 0, len(es))
	for _, e := range es {
		s = append(s, e.From.String()+"->"+e.To.String())
	}
	return strings.Join(s, ",")
}

func TestNew(t *testing.T) {
	fs := func(n string) string { return "flux-system/" + n }
	for _, tc := range []struct {
		name string
		ks   []*kustomizev1.Kustomization
		// want: the order, the levels (by name, "" when cyclic), the cycle
		// error, the cycle's nodes, the dangling edges, the nodes not
		// ordered after the root.
		order, levels, cycle, cycleNodes, dangling, notAfter string
	}{
		{name: "chain: order and levels",
			ks:    []*kustomizev1.Kustomization{kust("apps", "platform"), kust("platform", "flux-system", "cni"), kust("cni", "flux-system"), kust("flux-system")},
			order: "flux-system/flux-system,flux-system/cni,flux-system/platform,flux-system/apps", levels: "apps=3 cni=1 flux-system=0 platform=2"},
		{name: "diamond: one level per distance, the shared node once",
			ks:    []*kustomizev1.Kustomization{kust("flux-system"), kust("left", "flux-system"), kust("right", "flux-system"), kust("top", "left", "right")},
			order: "flux-system/flux-system,flux-system/left,flux-system/right,flux-system/top", levels: "flux-system=0 left=1 right=1 top=2"},
		{name: "cycle named in the error",
			ks:    []*kustomizev1.Kustomization{kust("flux-system"), kust("a", "flux-system", "c"), kust("b", "a"), kust("c", "b")},
			cycle: "circular dependency detected: flux-system/a -> flux-system/c -> flux-system/b -> flux-system/a", cycleNodes: strings.Join([]string{fs("a"), fs("c"), fs("b"), fs("a")}, ",")},
		{name: "self-loop is a cycle",
			ks:    []*kustomizev1.Kustomization{kust("flux-system"), kust("a", "flux-system", "a")},
			cycle: "circular dependency detected: flux-system/a -> flux-system/a", cycleNodes: fs("a") + "," + fs("a")},
		{name: "dangling edge, left out of the order",
			ks:    []*kustomizev1.Kustomization{kust("flux-system"), kust("a", "flux-system", "ghost")},
			order: fs("flux-system") + "," + fs("a"), levels: "a=1 flux-system=0", dangling: fs("a") + "->" + fs("ghost")},
		{name: "cross-namespace ref kept, empty namespace defaulted to the dependent's own",
			ks:    []*kustomizev1.Kustomization{kust("flux-system"), kust("apps/a", "flux-system/flux-system"), kust("apps/b", "a"), kust("apps/c", "flux-system")},
			order: "flux-system/flux-system,apps/a,apps/b,apps/c", levels: "a=1 b=2 c=0 flux-system=0", dangling: "apps/c->apps/flux-system", notAfter: "apps/c"},
		{name: "no namespace on the object: the default namespace",
			ks:    []*kustomizev1.Kustomization{kust("flux-system"), kust("/a", "flux-system")},
			order: fs("flux-system") + "," + fs("a"), levels: "a=1 flux-system=0"},
		{name: "node not ordered after the root",
			ks:    []*kustomizev1.Kustomization{kust("flux-system"), kust("a", "flux-system"), kust("island"), kust("b", "island")},
			order: "flux-system/flux-system,flux-system/a,flux-system/island,flux-system/b", levels: "a=1 b=1 flux-system=0 island=0", notAfter: fs("b") + "," + fs("island")},
		{name: "no root: nothing is ordered after it",
			ks:    []*kustomizev1.Kustomization{kust("a"), kust("b", "a")},
			order: fs("a") + "," + fs("b"), levels: "a=0 b=1", notAfter: fs("a") + "," + fs("b")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := New(tc.ks, root, "flux-system")
			var lv []string
			for _, id := range g.IDs {
				if l, ok := g.Levels()[id]; ok {
					lv = append(lv, fmt.Sprintf("%s=%d", id.Name, l))
				}
			}
			cycle := ""
			if g.Cycle != nil {
				cycle = g.Cycle.Error()
			}
			for what, got := range map[string][2]string{
				"order":        {names(g.Order), tc.order},
				"levels":       {strings.Join(lv, " "), tc.levels},
				"cycle":        {cycle, tc.cycle},
				"cycle nodes":  {names(g.CycleNodes), tc.cycleNodes},
				"dangling":     {edges(g.Dangling), tc.dangling},
				"not after":    {names(g.NotAfterRoot), tc.notAfter},
				"appliers":     {fmt.Sprint(g.AppliersKnown, g.NotAppliedByRoot), "false []"},
				"nodes listed": {fmt.Sprint(len(g.IDs)), fmt.Sprint(len(tc.ks))},
			} {
				if got[0] != got[1] {
					t.Errorf("%s: got %q, want %q", what, got[0], got[1])
				}
			}
		})
	}
}

func TestDependents(t *testing.T) {
	g := New([]*kustomizev1.Kustomization{kust("flux-system"), kust("b", "flux-system"), kust("a", "flux-system")}, root, "flux-system")
	if got := names(g.Nodes[root].Dependents); got != "flux-system/a,flux-system/b" {
		t.Fatalf("dependents %s", got)
	}
}

// TestFromEnvAppliedByRoot: "applied by the root" follows appliers, not
// dependsOn; "ordered after the root" is a dependsOn chain to it or being
// applied by it (kustomize-controller has no rule that a child depend on
// its root).
func TestFromEnvAppliedByRoot(t *testing.T) {
	mk := func(ref, appliedBy string, deps ...string) *fluxrepo.Kustomization {
		return &fluxrepo.Kustomization{Kustomization: kust(ref, deps...), AppliedBy: appliedBy}
	}
	env := &fluxrepo.Env{
		Options: fluxrepo.Options{Namespace: "flux-system", RootName: "flux-system"},
		Kustomizations: []*fluxrepo.Kustomization{
			mk("flux-system", "flux-system/flux-system"),
			// applied by the root and ordered after it
			mk("infra", "flux-system/flux-system", "flux-system"),
			// applied through infra, ordered after nothing
			mk("crds", "flux-system/infra"),
			// ordered after the root but applied by nothing
			mk("orphan", "", "flux-system"),
			// applied by the orphan: not by the root either
			mk("orphan-child", "flux-system/orphan", "infra"),
			// applied by nothing, ordered after nothing
			mk("island", ""),
		},
	}
	g := FromEnv(env)
	if !g.AppliersKnown || g.Root != root {
		t.Fatalf("appliers known %v, root %s", g.AppliersKnown, g.Root)
	}
	if got := names(g.NotAppliedByRoot); got != "flux-system/island,flux-system/orphan,flux-system/orphan-child" {
		t.Errorf("not applied by the root: %s", got)
	}
	// crds is created by the root's applies (through infra): it cannot run
	// before the root applied it, as in the flux bootstrap layout, whose
	// Kustomizations never depend on flux-system.
	if got := names(g.NotAfterRoot); got != "flux-system/island" {
		t.Errorf("not ordered after the root: %s", got)
	}
	if g.Nodes[NodeID{Namespace: "flux-system", Name: "crds"}].AppliedBy != (NodeID{Namespace: "flux-system", Name: "infra"}) {
		t.Errorf("crds applied by %s", g.Nodes[NodeID{Namespace: "flux-system", Name: "crds"}].AppliedBy)
	}

	// A root that does not apply the environment's directory: nothing it
	// renders is applied by the root.
	env.Kustomizations[0].AppliedBy, env.Kustomizations[1].AppliedBy = "", ""
	if got := names(FromEnv(env).NotAppliedByRoot); got != "flux-system/crds,flux-system/infra,flux-system/island,flux-system/orphan,flux-system/orphan-child" {
		t.Errorf("root applying another directory: not applied by the root: %s", got)
	}
}

func TestGatedPath(t *testing.T) {
	other := func(k *kustomizev1.Kustomization) *kustomizev1.Kustomization {
		k.Spec.SourceRef.Name = "shared"
		return k
	}
	g := New([]*kustomizev1.Kustomization{
		kust("flux-system"), kust("infra", "flux-system"), kust("apps", "infra", "flux-system"),
		other(kust("monitoring", "flux-system")), kust("dash", "monitoring"), kust("island"),
	}, root, "flux-system")
	id := func(n string) NodeID { return NodeID{Namespace: "flux-system", Name: n} }
	for _, tc := range []struct{ from, to, want string }{
		{"apps", "flux-system", "flux-system/apps,flux-system/flux-system"}, // shortest
		{"infra", "flux-system", "flux-system/infra,flux-system/flux-system"},
		{"apps", "apps", "flux-system/apps"},
		{"dash", "flux-system", ""},       // monitoring reads another source
		{"monitoring", "flux-system", ""}, // the first edge already crosses sources
		{"island", "flux-system", ""},
		{"ghost", "flux-system", ""},
	} {
		if got := names(g.GatedPath(id(tc.from), id(tc.to))); got != tc.want {
			t.Errorf("%s -> %s: got %q, want %q", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestDescribeAndSources(t *testing.T) {
	mon := kust("monitoring", "flux-system")
	mon.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Name: "shared"} // kind and namespace defaulted
	g := New([]*kustomizev1.Kustomization{mon, kust("flux-system")}, root, "flux-system")
	want := "flux-system/flux-system (source GitRepository/flux-system/flux-system)\nflux-system/monitoring (source GitRepository/flux-system/shared) dependsOn flux-system/flux-system"
	if got := strings.Join(g.Describe(), "\n"); got != want {
		t.Errorf("describe:\n%s\nwant:\n%s", got, want)
	}
	if got := fmt.Sprint(g.Sources()); got != "[GitRepository/flux-system/flux-system GitRepository/flux-system/shared]" {
		t.Errorf("sources %s", got)
	}
	// Cyclic: by ID, no levels.
	g = New([]*kustomizev1.Kustomization{kust("b", "a"), kust("a", "b")}, root, "flux-system")
	if g.Levels() != nil || len(g.Describe()) != 2 || !strings.HasPrefix(g.Describe()[0], "flux-system/a ") {
		t.Errorf("cyclic: levels %v, describe %q", g.Levels(), g.Describe())
	}
}

func TestUpstream(t *testing.T) {
	g := New([]*kustomizev1.Kustomization{
		kust("flux-system"), kust("left", "flux-system"), kust("right", "flux-system", "ghost"), kust("top", "left", "right"),
		kust("x", "y"), kust("y", "x"),
	}, root, "flux-system")
	for from, want := range map[string]string{
		"top":         "flux-system/left,flux-system/flux-system,flux-system/right", // the shared node once, ghost left out
		"right":       "flux-system/flux-system",
		"flux-system": "",
		"x":           "flux-system/y,flux-system/x", // a cycle ends the walk
		"ghost":       "",
	} {
		if got := names(g.Upstream(NodeID{Namespace: "flux-system", Name: from})); got != want {
			t.Errorf("upstream of %s: got %q, want %q", from, got, want)
		}
	}
}

// TestProblems: the graph's verdicts are typed, in order (root, cycle,
// dangling edges, nodes not ordered after the root), and a rooted, acyclic,
// complete graph has none.
func TestProblems(t *testing.T) {
	kinds := func(ps []Problem) string {
		var out []string
		for _, p := range ps {
			out = append(out, fmt.Sprint(p.Kind))
		}
		return strings.Join(out, ",")
	}
	ok := New([]*kustomizev1.Kustomization{kust("flux-system"), kust("apps", "flux-system")}, root, "flux-system")
	if ps := ok.Problems(); len(ps) != 0 {
		t.Errorf("sound graph: %v", ps)
	}
	bad := New([]*kustomizev1.Kustomization{kust("flux-system"), kust("a", "b"), kust("b", "a"), kust("c", "ghost")}, root, "flux-system")
	ps := bad.Problems()
	want := fmt.Sprint(CycleFound) + "," + fmt.Sprint(DanglingEdge) + strings.Repeat(","+fmt.Sprint(NotOrderedAfterRoot), 3)
	if kinds(ps) != want {
		t.Fatalf("kinds %s, want %s", kinds(ps), want)
	}
	if ps[1].Edge != (Edge{From: NodeID{Namespace: "flux-system", Name: "c"}, To: NodeID{Namespace: "flux-system", Name: "ghost"}}) || len(ps[0].CycleNodes) == 0 {
		t.Errorf("dangling %v, cycle %v", ps[1].Edge, ps[0].CycleNodes)
	}
	unrooted := New([]*kustomizev1.Kustomization{kust("apps")}, root, "flux-system")
	if ps := unrooted.Problems(); kinds(ps) != fmt.Sprint(RootMissing) || ps[0].Root != root {
		t.Errorf("no root: %v", ps)
	}
}

// TestAppliedByRootLabelsOrder: a live Kustomization kustomize-controller
// labels as applied by the root (its ssa owner labels) is ordered after the
// root without a dependsOn; one applied by nothing in the graph is not.
func TestAppliedByRootLabelsOrder(t *testing.T) {
	child := kust("apps")
	child.Labels = map[string]string{AppliedByNameLabel: "flux-system", AppliedByNamespaceLabel: "flux-system"}
	stray := kust("stray")
	stray.Labels = map[string]string{AppliedByNameLabel: "elsewhere", AppliedByNamespaceLabel: "flux-system"}
	g := New([]*kustomizev1.Kustomization{kust("flux-system"), child, stray}, root, "flux-system")
	if got := names(g.NotAfterRoot); got != "flux-system/stray" {
		t.Errorf("not ordered after the root: %s, want flux-system/stray", got)
	}
}
