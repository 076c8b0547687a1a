package check

// detUndefined is the [undefined] row of the table of detectors.
var detUndefined = detector{ID: Undefined, Gate: Substitution, Advisory: false,
	Short:   "undefined variable: strict post-build substitution fails the whole Kustomization; without it, it renders empty (fail open)",
	Rule:    "fluxcd/pkg/kustomize v1.35.6 SubstituteVariables with fluxcd/pkg/envsubst v1.7.1 strict mode (kustomize-controller v1.9.5 --feature-gates StrictPostBuildSubstitutions): an unset variable fails the build",
	Emitted: "substitution.expression (subst.go)",
}
