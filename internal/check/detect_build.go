package check

// detBuild is the [build] row of the table of detectors.
var detBuild = detector{ID: Build, Gate: Render, Advisory: false,
	Short:   "Kustomization whose path does not build: kustomize-controller fails it (BuildFailed) and applies the others",
	Rule:    "kustomize-controller v1.9.x internal/controller/kustomization_controller.go reconcile: a build error marks that Kustomization Ready=False, BuildFailed; the others reconcile on",
	Emitted: "buildFinding, rootBuildFinding (check.go)",
}
