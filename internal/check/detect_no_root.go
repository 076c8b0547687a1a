package check

// detNoRoot is the [no-root] row of the table of detectors.
var detNoRoot = detector{ID: NoRoot, Gate: Graph, Advisory: false,
	Short: "environment without its own root Kustomization or GitRepository",
	Rule:  "flux bootstrap's flux-system/gotk-sync.yaml (or a FluxInstance spec.sync): without the root, nothing applies the path, and a dependsOn on it waits forever (DependencyNotReady)",
}
