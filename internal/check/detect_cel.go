package check

// detBadCEL is the [cel] row of the table of detectors.
var detBadCEL = detector{ID: BadCEL, Gate: CEL, Advisory: false,
	Short:   "readyExpr or healthCheckExprs the controller cannot compile: the object stalls",
	Rule:    "kustomize-controller v1.9.5 and helm-controller v1.6.4 compile readyExpr (dependsOn) and healthCheckExprs with fluxcd/pkg/runtime/cel: a failure is InvalidCELExpression, stalled",
	Emitted: "checkCEL (cel.go)",
}
