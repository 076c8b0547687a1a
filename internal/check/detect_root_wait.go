package check

// detRootWait is the [root-wait] row of the table of detectors.
var detRootWait = detector{ID: RootWait, Gate: Graph, Advisory: false,
	Short: "root Kustomization whose health check waits for a Kustomization that depends on it: a deadlock",
	Rule:  "kustomize-controller v1.9.5 checkHealth (wait: true or spec.healthChecks) and checkDependencies (DependencyNotReady); fluxgraph.RootWaiters",
}
