package check

// detDefaultOp is the [default-op] row of the table of detectors.
var detDefaultOp = detector{ID: DefaultOp, Gate: Substitution, Advisory: true,
	Short:   "default-operator expansion on an undefined name: a dead shell check in a script, a message rendered as a value, or (advisory) a template default",
	Rule:    "fluxcd/pkg/envsubst v1.7.1 parse (:-, :=, :?, :+ on an unset variable): the default renders, strict mode or not",
	Emitted: "substitution.expression (subst.go)",
}
