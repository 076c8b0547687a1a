package check

// detDangling is the [dangling] row of the table of detectors.
var detDangling = detector{ID: Dangling, Gate: Graph, Advisory: false,
	Short: "dependsOn on a Kustomization or HelmRelease the environment does not render",
	Rule:  "kustomize-controller v1.9.5 and helm-controller v1.6.4 checkDependencies: a dependsOn entry not found is DependencyNotReady, retried forever",
}
