package check

// detUnreachable is the [unreachable] row of the table of detectors.
var detUnreachable = detector{ID: Unreachable, Gate: Graph, Advisory: false,
	Short: "object not applied by any Kustomization reachable from the root",
	Rule:  "kustomize-controller v1.9.5 applies what a Kustomization's path renders: an object the root's chain does not apply is created once by bootstrap and never updated or pruned (fluxgraph NotAppliedByRoot)",
}
