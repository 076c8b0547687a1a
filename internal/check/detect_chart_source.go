package check

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detChartSource is the [chart-source] row of the table of detectors.
var detChartSource = detector{ID: ChartSource, Gate: Graph, Advisory: false,
	Short:   "HelmRelease whose chart source is invalid or not rendered by the environment",
	Rule:    "helm-controller v1.6.4 (HelmRelease v2 API: spec.chart and spec.chartRef are mutually exclusive; a chart source not found is never installed)",
	problem: chartSourceFindings,
}

// chartSourceFindings is [chart-source]: a HelmRelease's chart source that
// is invalid, or that the environment does not render (a warning while a
// path did not build).
func chartSourceFindings(gs *graphScan, p fluxgraph.Problem) []finding {
	loc := nodeLocation(gs.env, p.Node)
	switch {
	case p.Kind == fluxgraph.InvalidChartSource:
		return []finding{at(loc, verify.Finding{Detector: ChartSource,
			Message: p.Err.Error(), Fix: "set exactly one of spec.chart and spec.chartRef (chartRef kind OCIRepository, HelmChart or ExternalArtifact)"})}
	case p.Kind == fluxgraph.ChartSourceNotRendered && gs.unbuilt != "":
		return []finding{at(loc, verify.Finding{Detector: ChartSource, Verdict: verify.Warn,
			Message: fmt.Sprintf("HelmRelease %s reads its chart from %s, which no path that built renders; %s did not build whole and may render it: judged once it builds", p.Node.Key(), p.Source, gs.unbuilt),
			Fix:     fmt.Sprintf("fix the [build] failure first; then render %s or fix the reference", p.Source)})}
	case p.Kind == fluxgraph.ChartSourceNotRendered:
		return []finding{at(loc, verify.Finding{Detector: ChartSource,
			Message: fmt.Sprintf("HelmRelease %s reads its chart from %s, which the environment does not render: helm-controller reports it not found and never installs", p.Node.Key(), p.Source),
			Fix:     fmt.Sprintf("render %s in a Kustomization the HelmRelease's applier depends on, or fix the reference", p.Source)})}
	}
	return nil
}
