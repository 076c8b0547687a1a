// Package fluxgraph is the one dependsOn graph of an environment's Flux
// Kustomizations, built from the repository model (FromEnv: Kustomizations
// not created yet are known, and so is which Kustomization applies each) or
// from live objects (New). Every phase that asks something of that graph
// reads it here: check.graph, sync's before-gate sync.depends-on and
// converge (its graph gate and its walk).
//
// It owns:
//
//   - namespace defaulting of dependsOn references: an empty namespace is
//     the dependent's own, as kustomize-controller resolves it;
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
//     source), which is what the converge walk follows.
package fluxgraph

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/dependency"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// NodeID names a Kustomization.
type NodeID struct{ Namespace, Name string }

// String is namespace/name.
func (n NodeID) String() string { return n.Namespace + "/" + n.Name }

// ParseID reads namespace/name (NodeID.String, fluxrepo's AppliedBy); ok
// is false for anything else.
func ParseID(s string) (NodeID, bool) {
	ns, name, ok := strings.Cut(s, "/")
	return NodeID{Namespace: ns, Name: name}, ok && ns != "" && name != ""
}

// ID is k's node: defaultNS when k has no namespace (a manifest that sets
// none is applied into it).
func ID(k *kustomizev1.Kustomization, defaultNS string) NodeID {
	if k.Namespace == "" {
		return NodeID{Namespace: defaultNS, Name: k.Name}
	}
	return NodeID{Namespace: k.Namespace, Name: k.Name}
}

// DependencyID is the Kustomization a dependsOn entry of the Kustomization
// from names: an empty namespace is from's own (kustomize-controller's
// checkDependencies).
func DependencyID(from NodeID, d kustomizev1.DependencyReference) NodeID {
	if d.Namespace == "" {
		return NodeID{Namespace: from.Namespace, Name: d.Name}
	}
	return NodeID{Namespace: d.Namespace, Name: d.Name}
}

// SourceRef names a node's source: GitRepository, OCIRepository or Bucket.
type SourceRef struct{ Kind, Namespace, Name string }

// String is Kind/namespace/name.
func (s SourceRef) String() string { return s.Kind + "/" + s.Namespace + "/" + s.Name }

// Node is one Kustomization of the graph.
type Node struct {
	ID NodeID
	// Source is spec.sourceRef, its namespace defaulted to the node's and
	// its kind to GitRepository.
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
		n := &Node{ID: id, Source: sourceOf(k, id.Namespace)}
		if appliers != nil {
			n.AppliedBy = appliers[i]
		}
		for _, d := range k.Spec.DependsOn {
			n.DependsOn = append(n.DependsOn, DependencyID(id, d))
		}
		g.Nodes[id] = n
		g.IDs = append(g.IDs, id)
		if k.Namespace != id.Namespace {
			k = k.DeepCopy()
			k.Namespace = id.Namespace
		}
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

func sourceOf(k *kustomizev1.Kustomization, namespace string) SourceRef {
	ref := k.Spec.SourceRef
	src := SourceRef{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
	if src.Namespace == "" {
		src.Namespace = namespace
	}
	if src.Kind == "" {
		src.Kind = sourcev1.GitRepositoryKind
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
