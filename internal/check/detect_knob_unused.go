package check

// detKnobUnused is the [knob-unused] row of the table of detectors.
var detKnobUnused = detector{ID: KnobUnused, Gate: Knobs, Advisory: true,
	Short:   "substituteFrom knob nobody references",
	Rule:    "fluxcd/pkg/kustomize v1.35.6 LoadVariables loads every key; only the ${…} the objects reference are substituted",
	Emitted: "unusedJudge.judge (knobs.go)",
}
