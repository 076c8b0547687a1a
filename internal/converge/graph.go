// Package converge is step 4: walk the dependsOn graph of an environment's
// Flux Kustomizations until every one is Ready at its own source's current
// artifact revision. It takes the graph (internal/fluxgraph: from the
// repository, so Kustomizations not yet created are known, or from the live
// cluster), gates it before anything is awaited (acyclic, every dependsOn
// target exists, every node ordered after the root), classifies every node
// on every watch event, asks blocked or stale dependents to reconcile as
// soon as their dependencies converged (a nudge, instead of
// kustomize-controller's 30 s --requeue-dependency), fails fast on a node
// that keeps failing or is terminal, and reports one gate per node with a
// timeline.
package converge

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
)

// NodeID names a Kustomization (fluxgraph's).
type NodeID = fluxgraph.NodeID

// SourceRef names a node's source (fluxgraph's).
type SourceRef = fluxgraph.SourceRef

// problems lists what makes the graph unusable for the walk, each naming
// the fix; empty when the graph is acyclic, complete and every node is
// ordered after the root. A graph without a root (Walk's selection) is
// held to the first two only.
func problems(g *fluxgraph.Graph) []string {
	var out []string
	_, rooted := g.Nodes[g.Root]
	if !rooted && g.Root != (NodeID{}) {
		out = append(out, fmt.Sprintf("the root Kustomization %s is not in the graph: add the environment's sync.yaml (or pass --root)", g.Root))
	}
	if g.Cycle != nil {
		out = append(out, fmt.Sprintf("dependsOn has a cycle (%v): kustomize-controller would block every node on it forever; remove one of its edges", g.Cycle))
	}
	for _, e := range g.Dangling {
		out = append(out, fmt.Sprintf("%s depends on %s, which is not in the graph: it would wait forever; add %s or drop the edge", e.From, e.To, e.To))
	}
	if rooted {
		for _, id := range g.NotAfterRoot {
			out = append(out, fmt.Sprintf("%s is not reachable from the root %s through dependsOn: nothing orders it after the root; add a dependsOn chain to %s", id, g.Root, g.Root))
		}
	}
	return out
}
