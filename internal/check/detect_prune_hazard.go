package check

// detPrune is the [prune-hazard] row of the table of detectors.
var detPrune = detector{ID: Prune, Gate: PruneHazard, Advisory: true,
	Short: "prune: true Kustomization is the only declarer of a shared Namespace",
	Rule:  "kustomize-controller v1.9.5 prune (fluxcd/pkg/ssa DeleteAll of the inventory's stale objects) deletes a Namespace no longer declared, unless annotated kustomize.toolkit.fluxcd.io/prune: disabled",
}
