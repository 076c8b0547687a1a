package check

// detTwoAppliers is the [two-appliers] row of the table of detectors.
var detTwoAppliers = detector{ID: TwoAppliers, Gate: Graph, Advisory: true,
	Short:   "object applied by two Kustomizations: each reconcile overwrites the other's, and prune by one deletes what the other declares",
	Rule:    "kustomize-controller v1.9.5 (internal/controller/kustomization_controller.go) labels what it applies with its owner (fluxcd/pkg/ssa v0.76 ResourceManager.SetOwnerLabels) and prunes by that label",
	Emitted: "checkAppliers (appliers.go)",
}
