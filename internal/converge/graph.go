// Package converge is step 4: walk the dependsOn graph of an environment's
// Flux Kustomizations until every one is Ready at its own source's current
// artifact revision. It knows the graph (from the repository, so
// Kustomizations not yet created are known, or from the live cluster),
// gates it before anything is awaited (acyclic, every dependsOn target
// exists, every node reachable from the root), classifies every node on
// every watch event, asks blocked or stale dependents to reconcile as soon
// as their dependencies converged (a nudge, instead of kustomize-controller's
// 30 s --requeue-dependency), fails fast on a node that keeps failing or is
// terminal, and reports one gate per node with a timeline.
package converge

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/runtime/dependency"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
)

// NodeID names a Kustomization.
type NodeID struct{ Namespace, Name string }

// String is namespace/name.
func (n NodeID) String() string { return n.Namespace + "/" + n.Name }

// SourceRef names a node's source: GitRepository, OCIRepository or Bucket.
type SourceRef struct{ Kind, Namespace, Name string }

// String is Kind/namespace/name.
func (s SourceRef) String() string { return s.Kind + "/" + s.Namespace + "/" + s.Name }

// Node is one Kustomization of the environment.
type Node struct {
	ID     NodeID
	Source SourceRef
	// DependsOn are the direct dependencies, namespaces defaulted.
	DependsOn []NodeID
	// Dependents are the nodes that list this one in dependsOn.
	Dependents []NodeID
}

// Graph is every Kustomization of an environment with its dependsOn edges.
type Graph struct {
	Root NodeID
	// Nodes by ID; IDs lists them sorted by name for stable output.
	Nodes map[NodeID]*Node
	IDs   []NodeID
	// Order is a topological order (dependencies first) from
	// fluxcd/pkg/runtime/dependency.Sort; nil when the graph has a cycle.
	Order []NodeID
	// Cycle is dependency.Sort's error naming the cycle, "" when acyclic.
	Cycle string
	// Dangling lists dependsOn edges whose target is not in the graph.
	Dangling []Edge
	// Unreachable lists nodes the root does not lead to (through the
	// dependents relation): nothing guarantees they are applied.
	Unreachable []NodeID
}

// Edge is a dependsOn edge: From depends on To.
type Edge struct{ From, To NodeID }

// NewGraph builds the graph of ks (from the repository's render or the live
// cluster) rooted at root. Kustomizations without a namespace take
// defaultNS. The result may be invalid: Check reports why.
func NewGraph(ks []*kustomizev1.Kustomization, root NodeID, defaultNS string) *Graph {
	g := &Graph{Root: root, Nodes: map[NodeID]*Node{}}
	var deps []dependency.Dependent
	for _, k := range ks {
		k = k.DeepCopy()
		if k.Namespace == "" {
			k.Namespace = defaultNS
		}
		id := NodeID{k.Namespace, k.Name}
		ref := k.Spec.SourceRef
		src := SourceRef{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
		if src.Namespace == "" {
			src.Namespace = k.Namespace
		}
		if src.Kind == "" {
			src.Kind = sourcev1.GitRepositoryKind
		}
		n := &Node{ID: id, Source: src}
		for _, d := range k.Spec.DependsOn {
			ns := d.Namespace
			if ns == "" {
				ns = k.Namespace
			}
			n.DependsOn = append(n.DependsOn, NodeID{ns, d.Name})
		}
		g.Nodes[id] = n
		g.IDs = append(g.IDs, id)
		deps = append(deps, k)
	}
	sort.Slice(g.IDs, func(i, j int) bool { return g.IDs[i].String() < g.IDs[j].String() })
	for _, id := range g.IDs {
		n := g.Nodes[id]
		for _, d := range n.DependsOn {
			if t, ok := g.Nodes[d]; ok {
				t.Dependents = append(t.Dependents, id)
			} else {
				g.Dangling = append(g.Dangling, Edge{id, d})
			}
		}
	}
	// dependency.Sort walks dangling targets as vertices without edges:
	// harmless, they are reported separately and dropped from the order.
	order, err := dependency.Sort(deps)
	if err != nil {
		g.Cycle = err.Error()
	} else {
		for _, r := range order {
			id := NodeID{r.Namespace, r.Name}
			if _, ok := g.Nodes[id]; ok && !slices.Contains(g.Order, id) {
				g.Order = append(g.Order, id)
			}
		}
	}
	seen := map[NodeID]bool{}
	var walk func(NodeID)
	walk = func(id NodeID) {
		if seen[id] {
			return
		}
		seen[id] = true
		if n, ok := g.Nodes[id]; ok {
			for _, d := range n.Dependents {
				walk(d)
			}
		}
	}
	walk(root)
	for _, id := range g.IDs {
		if !seen[id] {
			g.Unreachable = append(g.Unreachable, id)
		}
	}
	return g
}

// Problems lists what makes the graph unusable, each naming the fix; empty
// when the graph is acyclic, complete and rooted.
func (g *Graph) Problems() []string {
	var out []string
	if _, ok := g.Nodes[g.Root]; !ok {
		out = append(out, fmt.Sprintf("the root Kustomization %s is not in the graph: add the environment's sync.yaml (or pass --root)", g.Root))
	}
	if g.Cycle != "" {
		out = append(out, fmt.Sprintf("dependsOn has a cycle (%s): kustomize-controller would block every node on it forever; remove one of its edges", g.Cycle))
	}
	for _, e := range g.Dangling {
		out = append(out, fmt.Sprintf("%s depends on %s, which is not in the graph: it would wait forever; add %s or drop the edge", e.From, e.To, e.To))
	}
	if _, ok := g.Nodes[g.Root]; ok {
		for _, id := range g.Unreachable {
			out = append(out, fmt.Sprintf("%s is not reachable from the root %s through dependsOn: nothing orders it after the root; add a dependsOn chain to %s", id, g.Root, g.Root))
		}
	}
	return out
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

// Describe is the graph in one line per node, for evidence.
func (g *Graph) Describe() []string {
	var out []string
	for _, id := range g.orderOrIDs() {
		n := g.Nodes[id]
		var ds []string
		for _, d := range n.DependsOn {
			ds = append(ds, d.String())
		}
		line := fmt.Sprintf("%s (source %s)", id, n.Source)
		if len(ds) > 0 {
			line += " dependsOn " + strings.Join(ds, ", ")
		}
		out = append(out, line)
	}
	return out
}

func (g *Graph) orderOrIDs() []NodeID {
	if g.Order != nil {
		return g.Order
	}
	return g.IDs
}

// Sources lists the distinct sources the nodes read.
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
