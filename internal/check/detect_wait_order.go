package check

// detWaitOrder is the [wait-order] row of the table of detectors.
var detWaitOrder = detector{ID: WaitOrder, Gate: Graph, Advisory: true,
	Short: "Kustomization health-checking a HelmRelease whose dependencies another Kustomization applies, without depending on it: it holds a kustomize-controller worker meanwhile",
	Rule:  "kustomize-controller v1.9.5 holds one of its --concurrent workers for the health check; helm-controller v1.6.4 checkDependencies keeps the release DependencyNotReady",
}
