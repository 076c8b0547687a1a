package check

// detParseError is the [parse-error] row of the table of detectors.
var detParseError = detector{ID: ParseError, Gate: Substitution, Advisory: false,
	Short:   "expansion the controller's parser rejects: the whole Kustomization fails",
	Rule:    "fluxcd/pkg/envsubst v1.7.1 parse.Parse: an expansion it rejects fails SubstituteVariables, so the whole build",
	Emitted: "substitution.object, substitution.unexplained (subst.go)",
}
