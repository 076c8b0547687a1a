package check

// detPrerequisite is the [prerequisite] row of the table of detectors.
var detPrerequisite = detector{ID: Prerequisite, Gate: Knobs, Advisory: true,
	Short:   "substituteFrom object made outside the environment: it must exist before the Kustomizations reading it reconcile",
	Rule:    "fluxcd/pkg/kustomize v1.35.6 LoadVariables: a substituteFrom object that is not optional and not found fails the build",
	Emitted: "prerequisiteFinding (knobs.go)",
}
