package check

// detCycle is the [cycle] row of the table of detectors.
var detCycle = detector{ID: Cycle, Gate: Graph, Advisory: false,
	Short: "dependsOn cycle",
	Rule:  "kustomize-controller v1.9.5 and helm-controller v1.6.4 checkDependencies: a Kustomization (HelmRelease) waits for each dependsOn entry to be Ready",
}
