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
	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
)

// NodeID names a Kustomization (fluxgraph's).
type NodeID = fluxgraph.NodeID

// SourceRef names a node's source (fluxgraph's).
type SourceRef = fluxgraph.SourceRef

// problems lists what makes the graph unusable for the walk, each naming
// the fix (fluxgraph's verdicts in its words); empty when the graph is
// acyclic, complete and every node is ordered after the root.
func problems(g *fluxgraph.Graph) []string {
	var out []string
	for _, p := range g.Problems() {
		out = append(out, p.String())
	}
	return out
}
