package check

// detTypeChange is the [type] row of the table of detectors.
var detTypeChange = detector{ID: TypeChange, Gate: Substitution, Advisory: false,
	Short:   "built-in object invalid after substitution (a value whose YAML type changed): the API server refuses it",
	Rule:    "fluxcd/pkg/kustomize v1.35.6 SubstituteVariables substitutes the YAML text and decodes it again: a value whose type changed no longer decodes as the built-in type",
	Emitted: "substitution.typed (subst.go)",
}
