package check

import (
	"fmt"
	"maps"
	"slices"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detUnreachable is the [unreachable] row of the table of detectors.
var detUnreachable = detector{ID: Unreachable, Gate: Graph, Advisory: false,
	Short: "object not applied by any Kustomization reachable from the root",
	Rule:  "kustomize-controller v1.9.5 applies what a Kustomization's path renders: an object the root's chain does not apply is created once by bootstrap and never updated or pruned (fluxgraph NotAppliedByRoot)",
	graph: unreachableFindings, after: true,
}

// unreachableFindings is [unreachable]: a root applying another directory
// than the environment's, and every object the root's chain does not
// apply (fluxgraph's relation: the chain of Kustomizations whose builds
// render it reaches the root).
func unreachableFindings(gs *graphScan) []finding {
	env, root, path, rootRef := gs.env, gs.root, gs.path, gs.rootRef
	if root == nil {
		return nil
	}
	var fs []finding
	if root.Path != path {
		fs = append(fs, at(fieldLocation(env, root.Location, "spec", "path"), verify.Finding{Detector: Unreachable,
			Message: fmt.Sprintf("the root Kustomization %s applies %s, not the environment's directory %s", rootRef, root.Spec.Path, path),
			Fix:     fmt.Sprintf("set spec.path: ./%s", path)}))
	}
	for _, id := range gs.g.NotAppliedByRoot {
		fs = append(fs, at(nodeLocation(env, id), verify.Finding{Detector: Unreachable,
			Message: fmt.Sprintf("%s %s is rendered by %s but no Kustomization reachable from the root %s applies it: bootstrap creates it once, nothing updates or prunes it", id.KindName(), id.Key(), path, rootRef),
			Fix:     fmt.Sprintf("make the root apply %s (spec.path ./%s), or move it under a path the root applies", path, path)}))
	}
	for _, key := range slices.Sorted(maps.Keys(env.Data)) {
		if d := env.Data[key]; d.AppliedBy == "" {
			fs = append(fs, at(d.Location, verify.Finding{Detector: Unreachable,
				Message: fmt.Sprintf("%s is rendered by %s but applied by no Kustomization reachable from the root %s", key, path, rootRef),
				Fix:     fmt.Sprintf("make the root apply %s (spec.path ./%s)", path, path)}))
		}
	}
	return fs
}
