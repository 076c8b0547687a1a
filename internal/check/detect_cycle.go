package check

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detCycle is the [cycle] row of the table of detectors.
var detCycle = detector{ID: Cycle, Gate: Graph, Advisory: false,
	Short:   "dependsOn cycle",
	Rule:    "kustomize-controller v1.9.5 and helm-controller v1.6.4 checkDependencies: a Kustomization (HelmRelease) waits for each dependsOn entry to be Ready",
	problem: cycleFindings,
}

// cycleFindings is [cycle]: a dependsOn cycle fluxgraph found.
func cycleFindings(gs *graphScan, p fluxgraph.Problem) []finding {
	if p.Kind != fluxgraph.CycleFound {
		return nil
	}
	return []finding{at(nodeLocation(gs.env, p.CycleNodes...), verify.Finding{Detector: Cycle,
		Message: fmt.Sprintf("dependsOn %v: none of these %ss can ever become Ready", p.Cycle, p.CycleNodes[0].KindName()),
		Fix:     "remove one dependsOn edge of the cycle"})}
}
