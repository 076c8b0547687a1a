// Package fluxgraph is the one dependsOn graph of an environment's Flux
// Kustomizations, built from the repository model (FromEnv: Kustomizations
// not created yet are known, and so is which Kustomization applies each) or
// from live objects (New). Every phase that asks something of that graph
// reads it here: check.graph, sync's before-gate sync.depends-on and
// converge (its graph gate and its walk).
//
// It owns:
//
//   - the edges, each read with the model's rules (internal/fluxobj:
//     dependsOn and sourceRef namespaces defaulted as kustomize-controller
//     defaults them);
//   - cycles, found with fluxcd/pkg/runtime/dependency.Sort (the
//     controllers' own tooling) and named;
//   - dangling edges: a dependsOn naming a Kustomization the graph does
//     not hold (kustomize-controller would wait for it forever);
//   - a topological order and levels;
//   - two relations to the root, which are not the same thing:
//     "applied by the root" — the root's build contains the Kustomization
//     object, directly or through Kustomizations the root applies, so a
//     change in git ever reaches it (known only for the repository model);
//     "ordered after the root" — a dependsOn chain from the Kustomization
//     reaches the root, so it waits for the root (revision-gated within one
//     source), which is what the converge walk follows;
//   - the verdicts on the graph, typed (Problems): converge, check and
//     sync word them from their fields.
package fluxgraph

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/dependency"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// NodeID names a Kustomization: namespace/name (the model's Key).
type NodeID = fluxobj.Key

// ParseID reads namespace/name (NodeID.String, fluxrepo's AppliedBy); ok
// is false for anything else.
func ParseID(s string) (NodeID, bool) { return fluxobj.ParseKey(s) }

// ID is k's node: defaultNS when k has no namespace (a manifest that sets
// none is applied into it).
func ID(k *kustomizev1.Kustomization, defaultNS string) NodeID {
	return NodeID{Namespace: fluxobj.NamespaceOr(k.Namespace, defaultNS), Name: k.Name}
}

// SourceRef names a node's source (the model's Ref): a GitRepository,
// OCIRepository, Bucket or ExternalArtifact.
type SourceRef = fluxobj.Ref

// Node is one Kustomization of the graph.
type Node struct {
	ID NodeID
	// Source is spec.sourceRef as fluxobj.KustomizationSource reads it
	// (namespace defaulted to the node's), an empty kind read as
	// fluxobj.DefaultSourceKind.
	Source SourceRef
	// DependsOn are the direct dependencies, namespaces defaulted, in the
	// order of spec.dependsOn.
	DependsOn []NodeID
	// Dependents are the nodes that list this one in dependsOn, by ID.
	Dependents []NodeID
	// AppliedBy is the Kustomization whose build renders this one; the
	// zero NodeID when none does (only the environment's root directory
	// renders it and no root Kustomization applies that directory) or when
	// that is not known (Graph.AppliersKnown is false).
	AppliedBy NodeID
}

// Edge is a dependsOn edge: From depends on To.
type Edge struct{ From, To NodeID }

// Graph is every Kustomization of an environment with its dependsOn edges.
// Lists of nodes and edges are in IDs order (by namespace/name).
type Graph struct {
	Root NodeID
	// Nodes by ID; IDs lists them sorted by namespace/name.
	Nodes map[NodeID]*Node
	IDs   []NodeID
	// Order is a topological order (dependencies first) from
	// dependency.Sort, without dangling targets; nil when there is a cycle.
	Order []NodeID
	// Cycle is dependency.Sort's error naming the cycle, nil when acyclic;
	// CycleNodes the cycle it names, first node repeated last.
	Cycle      error
	CycleNodes []NodeID
	// Dangling lists the dependsOn edges whose target is not in the graph.
	Dangling []Edge
	// NotAfterRoot lists the nodes not ordered after the root: no dependsOn
	// chain from them reaches it (all nodes when the root is not in the
	// graph). Nothing makes them wait for the root.
	NotAfterRoot []NodeID
	// AppliersKnown says Node.AppliedBy is known (a graph of the repository
	// model); NotAppliedByRoot is then the nodes other than the root whose
	// chain of appliers does not reach the root: bootstrap creates them
	// once, nothing updates or prunes them. Nil when appliers are not known.
	AppliersKnown    bool
	NotAppliedByRoot []NodeID
}

// New is the graph of ks (live objects, or any typed list) rooted at root.
// Kustomizations without a namespace take defaultNS; of two with the same
// ID the first is kept. Which Kustomization applies which is not known
// here (Graph.AppliersKnown is false). The result may hold cycles,
// dangling edges and nodes not ordered after the root: callers gate on
// them.
func New(ks []*kustomizev1.Kustomization, root NodeID, defaultNS string) *Graph {
	return build(ks, nil, root, defaultNS)
}

// FromEnv is the graph of every Kustomization the environment declares,
// rooted at its root Kustomization (env.Options' Namespace and RootName),
// with which Kustomization applies each (Graph.AppliersKnown).
func FromEnv(env *fluxrepo.Env) *Graph {
	ks := make([]*kustomizev1.Kustomization, 0, len(env.Kustomizations))
	appliers := make([]NodeID, 0, len(env.Kustomizations))
	for _, k := range env.Kustomizations {
		ks = append(ks, k.Kustomization)
		by, _ := ParseID(k.AppliedBy)
		appliers = append(appliers, by)
	}
	o := env.Options
	g := build(ks, appliers, NodeID{Namespace: o.Namespace, Name: o.RootName}, o.Namespace)
	g.AppliersKnown = true
	g.NotAppliedByRoot = g.notAppliedByRoot()
	return g
}

// build is New, with appliers[i] the applier of ks[i] when appliers is
// not nil.
func build(ks []*kustomizev1.Kustomization, appliers []NodeID, root NodeID, defaultNS string) *Graph {
	g := &Graph{Root: root, Nodes: map[NodeID]*Node{}}
	deps := make([]dependency.Dependent, 0, len(ks))
	for i, k := range ks {
		id := ID(k, defaultNS)
		if _, dup := g.Nodes[id]; dup {
			continue
		}
		if k.Namespace != id.Namespace {
			k = k.DeepCopy()
			k.Namespace = id.Namespace
		}
		n := &Node{ID: id, Source: sourceOf(k), DependsOn: fluxobj.KustomizationDependsOn(k)}
		if appliers != nil {
			n.AppliedBy = appliers[i]
		}
		g.Nodes[id] = n
		g.IDs = append(g.IDs, id)
		deps = append(deps, k)
	}
	sort.Slice(g.IDs, func(i, j int) bool { return g.IDs[i].String() < g.IDs[j].String() })
	for _, id := range g.IDs {
		for _, d := range g.Nodes[id].DependsOn {
			if t, ok := g.Nodes[d]; ok {
				t.Dependents = append(t.Dependents, id)
			} else {
				g.Dangling = append(g.Dangling, Edge{From: id, To: d})
			}
		}
	}
	g.sort(deps)
	g.NotAfterRoot = g.notAfterRoot()
	return g
}

func sourceOf(k *kustomizev1.Kustomization) SourceRef {
	src := fluxobj.KustomizationSource(k)
	if src.Kind == "" {
		src.Kind = fluxobj.DefaultSourceKind
	}
	return src
}

// sort sets Order, or Cycle and CycleNodes, with dependency.Sort. Sort
// walks dangling targets as vertices without edges: harmless, they are
// Dangling and left out of the order.
func (g *Graph) sort(deps []dependency.Dependent) {
	order, err := dependency.Sort(deps)
	if err != nil {
		g.Cycle = err
		_, chain, _ := strings.Cut(err.Error(), ": ")
		for _, s := range strings.Split(chain, " -> ") {
			if id, ok := ParseID(s); ok {
				g.CycleNodes = append(g.CycleNodes, id)
			}
		}
		return
	}
	for _, r := range order {
		id := NodeID{Namespace: r.Namespace, Name: r.Name}
		if _, ok := g.Nodes[id]; ok && !slices.Contains(g.Order, id) {
			g.Order = append(g.Order, id)
		}
	}
}

// notAfterRoot walks the dependents relation from the root: what it does
// not reach is not ordered after the root.
func (g *Graph) notAfterRoot() []NodeID {
	seen := map[NodeID]bool{}
	stack := []NodeID{g.Root}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n, ok := g.Nodes[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		stack = append(stack, n.Dependents...)
	}
	var out []NodeID
	for _, id := range g.IDs {
		if !seen[id] {
			out = append(out, id)
		}
	}
	return out
}

// notAppliedByRoot follows each node's appliers up: a chain that ends (or
// loops) before the root is not applied by the root.
func (g *Graph) notAppliedByRoot() []NodeID {
	var out []NodeID
	for _, id := range g.IDs {
		if id != g.Root && !g.appliedByRoot(id) {
			out = append(out, id)
		}
	}
	return out
}

func (g *Graph) appliedByRoot(id NodeID) bool {
	seen := map[NodeID]bool{}
	for n := g.Nodes[id]; n != nil && !seen[n.ID]; n = g.Nodes[n.AppliedBy] {
		if n.ID == g.Root {
			return true
		}
		seen[n.ID] = true
	}
	return false
}

// Upstream is every node id waits for through dependsOn, directly or
// transitively, each once, in depth-first preorder (a dependency before its
// own dependencies, in spec.dependsOn order); dangling targets are left
// out.
func (g *Graph) Upstream(id NodeID) []NodeID {
	var out []NodeID
	seen := map[NodeID]bool{}
	var walk func(NodeID)
	walk = func(x NodeID) {
		for _, d := range g.Nodes[x].DependsOn {
			if _, ok := g.Nodes[d]; !ok || seen[d] {
				continue
			}
			seen[d] = true
			out = append(out, d)
			walk(d)
		}
	}
	if _, ok := g.Nodes[id]; ok {
		walk(id)
	}
	return out
}

// GatedPath is a dependsOn path from from to to (both included) whose
// every edge joins two Kustomizations reading the same source — the edges
// kustomize-controller revision-gates: the dependent cannot apply a
// revision its dependency has not applied. The shortest such path, nil
// when there is none.
func (g *Graph) GatedPath(from, to NodeID) []NodeID {
	if _, ok := g.Nodes[from]; !ok {
		return nil
	}
	prev := map[NodeID]NodeID{from: from}
	queue := []NodeID{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			path := []NodeID{cur}
			for cur != from {
				cur = prev[cur]
				path = append(path, cur)
			}
			slices.Reverse(path)
			return path
		}
		n := g.Nodes[cur]
		for _, d := range n.DependsOn {
			dn, ok := g.Nodes[d]
			if _, seen := prev[d]; seen || !ok || dn.Source != n.Source {
				continue
			}
			prev[d] = cur
			queue = append(queue, d)
		}
	}
	return nil
}

// Levels is each node's depth: 0 for nodes without dependencies, else one
// more than its deepest dependency. Nil for a cyclic graph.
func (g *Graph) Levels() map[NodeID]int {
	if g.Order == nil && len(g.Nodes) > 0 {
		return nil
	}
	lv := map[NodeID]int{}
	for _, id := range g.Order {
		l := 0
		for _, d := range g.Nodes[id].DependsOn {
			if dl, ok := lv[d]; ok && dl+1 > l {
				l = dl + 1
			}
		}
		lv[id] = l
	}
	return lv
}

// InOrder is the nodes in Order, or by ID when the graph is cyclic.
func (g *Graph) InOrder() []NodeID {
	if g.Order != nil {
		return g.Order
	}
	return g.IDs
}

// Describe is the graph in one line per node (InOrder), for evidence.
func (g *Graph) Describe() []string {
	ids := g.InOrder()
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		n := g.Nodes[id]
		line := fmt.Sprintf("%s (source %s)", id, n.Source)
		if len(n.DependsOn) > 0 {
			ds := make([]string, 0, len(n.DependsOn))
			for _, d := range n.DependsOn {
				ds = append(ds, d.String())
			}
			line += " dependsOn " + strings.Join(ds, ", ")
		}
		out = append(out, line)
	}
	return out
}

// Sources lists the distinct sources the nodes read, sorted.
func (g *Graph) Sources() []SourceRef {
	var out []SourceRef
	for _, id := range g.IDs {
		if s := g.Nodes[id].Source; !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// ProblemKind is one of the graph's verdicts: what makes it unusable for
// the walk.
type ProblemKind int

// The graph's verdicts, in the order Problems reports them.
const (
	// RootMissing: the root is not a node of the graph.
	RootMissing ProblemKind = iota + 1
	// CycleFound: dependsOn has a cycle; kustomize-controller would block
	// every node on it forever.
	CycleFound
	// DanglingEdge: a dependsOn target is not in the graph; the dependent
	// would wait for it forever.
	DanglingEdge
	// NotOrderedAfterRoot: no dependsOn chain from the node reaches the
	// root, so nothing orders it after the root.
	NotOrderedAfterRoot
)

// Problem is one verdict on the graph, typed: callers word it from its
// fields (String is the plain wording), never by reading text.
type Problem struct {
	Kind ProblemKind
	// Root is the graph's root.
	Root NodeID
	// Node is the node not ordered after the root (NotOrderedAfterRoot).
	Node NodeID
	// Edge is the dangling edge (DanglingEdge).
	Edge Edge
	// Cycle is dependency.Sort's error and CycleNodes the cycle it names
	// (CycleFound).
	Cycle      error
	CycleNodes []NodeID
}

// Problems are the graph's verdicts: the root missing, the cycle, each
// dangling edge, and (when the root is a node) each node not ordered after
// the root. Empty when the graph is acyclic, complete and rooted.
func (g *Graph) Problems() []Problem {
	var out []Problem
	_, rooted := g.Nodes[g.Root]
	// A graph without a root (converge.Walk's selection of live objects) is
	// held to the cycle and dangling rules only.
	if !rooted && g.Root != (NodeID{}) {
		out = append(out, Problem{Kind: RootMissing, Root: g.Root})
	}
	if g.Cycle != nil {
		out = append(out, Problem{Kind: CycleFound, Root: g.Root, Cycle: g.Cycle, CycleNodes: g.CycleNodes})
	}
	for _, e := range g.Dangling {
		out = append(out, Problem{Kind: DanglingEdge, Root: g.Root, Edge: e})
	}
	if rooted {
		for _, id := range g.NotAfterRoot {
			out = append(out, Problem{Kind: NotOrderedAfterRoot, Root: g.Root, Node: id})
		}
	}
	return out
}

// String is the problem in plain words, naming the fix.
func (p Problem) String() string {
	switch p.Kind {
	case RootMissing:
		return fmt.Sprintf("the root Kustomization %s is not in the graph: add the environment's sync.yaml (or pass --root)", p.Root)
	case CycleFound:
		return fmt.Sprintf("dependsOn has a cycle (%v): kustomize-controller would block every node on it forever; remove one of its edges", p.Cycle)
	case DanglingEdge:
		return fmt.Sprintf("%s depends on %s, which is not in the graph: it would wait forever; add %s or drop the edge", p.Edge.From, p.Edge.To, p.Edge.To)
	case NotOrderedAfterRoot:
		return fmt.Sprintf("%s is not reachable from the root %s through dependsOn: nothing orders it after the root; add a dependsOn chain to %s", p.Node, p.Root, p.Root)
	}
	return fmt.Sprintf("problem %d", p.Kind)
}
