package converge

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// PhaseName is this phase's name in reports.
const PhaseName = "converge"

// The gates of the converge phase.
var (
	// GateReachable: the API server answers (converge would otherwise wait
	// out --timeout on a cluster that is not there).
	GateReachable = verify.Def{ID: "converge.reachable", Phase: PhaseName, Stage: verify.Before, Title: "API server reachable"}
	// GateGraph: the dependsOn graph is acyclic, every target exists, every
	// node is ordered after the root (fluxgraph: a dependsOn chain from it
	// reaches the root).
	GateGraph = verify.Def{ID: "converge.graph", Phase: PhaseName, Stage: verify.Before, Title: "the dependsOn graph can converge"}
	// GateNode is the family converge.node/<namespace>/<name>: one per node.
	GateNode = verify.Def{ID: "converge.node", Phase: PhaseName, Stage: verify.After, Title: "Kustomization Ready at its source's revision", Prefix: true}
)

// GraphCheck is the converge.graph gate for g.
func GraphCheck(g *fluxgraph.Graph, from string) verify.Check {
	if p := problems(g); len(p) > 0 {
		msg := p[0]
		if len(p) > 1 {
			msg = fmt.Sprintf("%s (and %d more problem(s))", p[0], len(p)-1)
		}
		return GateGraph.Fail(msg, append(p, g.Describe()...)...)
	}
	depth := 0
	for _, l := range g.Levels() {
		depth = max(depth, l+1)
	}
	ev := append([]string{"graph from " + from}, g.Describe()...)
	hrs := 0
	for id := range g.Nodes {
		if id.IsHelmRelease() {
			hrs++
		}
	}
	nodes := fmt.Sprintf("%d Kustomization(s)", len(g.Nodes)-hrs)
	if hrs > 0 {
		nodes += fmt.Sprintf(" and %d HelmRelease(s)", hrs)
	}
	return GateGraph.Pass(fmt.Sprintf("%s over %d level(s) of dependsOn, %d source(s), acyclic, every target present, all reachable from %s",
		nodes, depth, len(g.Sources()), g.Root), ev...)
}
