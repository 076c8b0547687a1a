package check

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detDangling is the [dangling] row of the table of detectors.
var detDangling = detector{ID: Dangling, Gate: Graph, Advisory: false,
	Short:   "dependsOn on a Kustomization or HelmRelease the environment does not render",
	Rule:    "kustomize-controller v1.9.5 and helm-controller v1.6.4 checkDependencies: a dependsOn entry not found is DependencyNotReady, retried forever",
	problem: danglingFindings,
}

// danglingFindings is [dangling]: a dependsOn entry naming what the
// environment does not render; a warning while a path did not build (what
// it would apply is unknown: the target may be there, and [build] fails it).
func danglingFindings(gs *graphScan, p fluxgraph.Problem) []finding {
	if p.Kind != fluxgraph.DanglingEdge {
		return nil
	}
	e := p.Edge
	loc := entryLocation(gs.env, nodeLocation(gs.env, e.From), e.To.Name, "name", "spec", "dependsOn")
	if gs.unbuilt != "" {
		return []finding{at(loc, verify.Finding{Detector: Dangling, Verdict: verify.Warn,
			Message: fmt.Sprintf("%s %s depends on %s, which no path that built renders; %s did not build whole and may render it: judged once it builds", e.From.KindName(), e.From.Key(), e.To.Key(), gs.unbuilt),
			Fix:     fmt.Sprintf("fix the [build] failure first; then render %s %s or remove the dependsOn entry", e.To.KindName(), e.To.Key())})}
	}
	return []finding{at(loc, verify.Finding{Detector: Dangling,
		Message: fmt.Sprintf("%s %s depends on %s, which the environment does not render: it waits forever (DependencyNotReady)", e.From.KindName(), e.From.Key(), e.To.Key()),
		Fix:     fmt.Sprintf("remove the dependsOn entry, or render %s %s", e.To.KindName(), e.To.Key())})}
}
