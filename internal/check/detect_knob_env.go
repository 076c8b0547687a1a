package check

// detKnobEnv is the [knob-env] row of the table of detectors.
var detKnobEnv = detector{ID: KnobEnv, Gate: Knobs, Advisory: true,
	Short:   "substituteFrom knob defined in one environment only",
	Rule:    "kustomize-controller v1.9.5 reads spec.postBuild.substituteFrom per cluster (fluxcd/pkg/kustomize LoadVariables): a knob missing in one environment is undefined there",
	Emitted: "knobEnv (knobs.go)",
}
