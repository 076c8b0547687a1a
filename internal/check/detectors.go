package check

import (
	"maps"
	"slices"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detector is one row of the table of detectors: everything said about a
// defect class, in one place. The SARIF rules, the policy's advisories and
// the gate a finding reports under all read it (issue 48 item 3).
type detector struct {
	ID verify.Detector
	// Gate is the gate (family) its findings report under.
	Gate verify.Def
	// Advisory: its findings may be warnings, and the policy's
	// advisories.disable may turn those off.
	Advisory bool
	// Short is its SARIF rule's shortDescription.
	Short string
	// Rule is the controller's rule it applies, cited (file/function and
	// version of the controller or library).
	Rule string
	// graph, problem: its function, for the detectors of check.graph
	// (checkGraph runs them); the others are named in Emitted.
	graph   graphFunc
	problem problemFunc
	// after: a graph detector run after fluxgraph's problems.
	after bool
	// Emitted names the function emitting it (in the row's file unless
	// another is named), and the scan calling it when one scan of a
	// Kustomization's objects serves several detectors.
	Emitted string
}

// detectors is the table, one row per detector (each row lives in the
// detect_<id>.go file with its function). The order is the order
// advisories are listed in the policy's error message.
var detectors = []*detector{
	&detUndefined, &detDefaultOp, &detParseError, &detLiteral, &detTypeChange,
	&detKnobEnv, &detKnobUnused, &detPrerequisite,
	&detRace, &detPrune, &detSchema,
	&detNoRoot, &detRootWait, &detCycle, &detDangling, &detHelmDependsOn, &detChartSource, &detSourceMissing, &detWaitOrder, &detUnreachable,
	&detTwoAppliers, &detBadCEL, &detBuild, &detUnread,
}

// detectorRow is the row of d (nil: not a detector).
func detectorRow(d verify.Detector) *detector {
	for _, r := range detectors {
		if r.ID == d {
			return r
		}
	}
	return nil
}

// advisoryDetectors are the detectors whose findings may be warnings, the
// ones the policy's advisories.disable names, in table order.
func advisoryDetectors() []verify.Detector {
	var out []verify.Detector
	for _, r := range detectors {
		if r.Advisory {
			out = append(out, r.ID)
		}
	}
	return out
}

// detectorsByID are the rows in ID order (the SARIF rules' order).
func detectorsByID() []*detector {
	byID := map[verify.Detector]*detector{}
	for _, r := range detectors {
		byID[r.ID] = r
	}
	out := make([]*detector, 0, len(byID))
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, byID[id])
	}
	return out
}

// graphFunc is a detector of check.graph run once per environment.
type graphFunc func(*graphScan) []finding

// problemFunc is a detector of check.graph run on each of fluxgraph's
// problems, in the graph's order.
type problemFunc func(*graphScan, fluxgraph.Problem) []finding
