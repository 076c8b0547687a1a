package check

// detLiteral is the [literal] row of the table of detectors.
var detLiteral = detector{ID: Literal, Gate: Substitution, Advisory: true,
	Short:   "${…} that nothing substitutes: the literal ships",
	Rule:    "fluxcd/pkg/kustomize v1.35.6 SubstituteVariables: without spec.postBuild, or with the object labelled kustomize.toolkit.fluxcd.io/substitute: disabled, ${…} is applied as written",
	Emitted: "literalCheck, substitution.object (subst.go)",
}
