package check

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detHelmDependsOn is the [helm-depends-on] row of the table of detectors.
var detHelmDependsOn = detector{ID: HelmDependsOn, Gate: Graph, Advisory: false,
	Short:   "HelmRelease dependsOn naming a Kustomization: helm-controller waits for HelmReleases only",
	Rule:    "helm-controller v1.6.4 checkDependencies reads dependsOn entries as HelmReleases",
	problem: helmDependsOnFindings,
}

// helmDependsOnFindings is [helm-depends-on]: a HelmRelease's dependsOn
// naming a Kustomization.
func helmDependsOnFindings(gs *graphScan, p fluxgraph.Problem) []finding {
	if p.Kind != fluxgraph.DependsOnKustomization {
		return nil
	}
	e := p.Edge
	return []finding{at(entryLocation(gs.env, nodeLocation(gs.env, e.From), e.To.Name, "name", "spec", "dependsOn"), verify.Finding{Detector: HelmDependsOn,
		Message: fmt.Sprintf("HelmRelease %s depends on %s, which is a Kustomization: helm-controller reads dependsOn as HelmReleases only (checkDependencies) and it waits forever", e.From.Key(), e.To.Key()),
		Fix:     helmDependsOnFix(gs.g, e)})}
}

// helmDependsOnFix says how to order a HelmRelease after a Kustomization:
// through the Kustomization that applies it.
func helmDependsOnFix(g *fluxgraph.Graph, e fluxgraph.Edge) string {
	fix := "remove the entry or depend on a HelmRelease instead"
	by := g.Nodes[e.From].AppliedBy
	switch {
	case by == e.To:
		return fix + fmt.Sprintf("; Kustomization %s applies %s, so it is already ordered after it", e.To, e.From.Key())
	case by != (fluxgraph.NodeID{}):
		return fix + fmt.Sprintf("; to order it after Kustomization %s, add dependsOn: [{name: %s, namespace: %s}] to Kustomization %s, which applies it", e.To, e.To.Name, e.To.Namespace, by)
	}
	return fix + fmt.Sprintf("; to order it after Kustomization %s, make the Kustomization that applies it depend on %s", e.To, e.To)
}
