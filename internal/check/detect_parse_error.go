package check

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detParseError is the [parse-error] row of the table of detectors.
var detParseError = detector{ID: ParseError, Gate: Substitution, Advisory: false,
	Short:   "expansion the controller's parser rejects: the whole Kustomization fails",
	Rule:    "fluxcd/pkg/envsubst v1.7.1 parse.Parse: an expansion it rejects fails SubstituteVariables, so the whole build",
	Emitted: "substitution.parseErrors, on each object of substitution.object's scan (subst.go); substitution.unexplained",
}

// parseErrors are the [parse-error] findings of r: the expressions of its
// text the parser rejects (bad, from funcNodes), each of which fails the
// whole Kustomization.
func (s *substitution) parseErrors(r *resource.Resource, bad []rejection) []finding {
	if !s.o.on(ParseError) {
		return nil
	}
	var out []finding
	for _, b := range bad {
		out = append(out, located(s.env, s.k, r, finding{Finding: verify.Finding{Detector: ParseError, Cause: b.text + ": the substitution parser rejects it",
			Message: fmt.Sprintf("%s in %s: the substitution parser rejects it (%v); the whole Kustomization %s fails", b.text, s.objName(r), b.err, s.k.Ref()),
			Fix:     "escape it as $" + b.text + " if it is meant literally"}, search: b.text}))
	}
	return out
}

// unexplained are the [parse-error] findings of the controller's failures
// (controllerErrs) the parser pass did not explain (e.g. an invalid
// variable name in a substituteFrom object): a defect of their own.
func (s *substitution) unexplained() []finding {
	var out []finding
	explained := false
	for _, f := range s.fs {
		// An [undefined] a webhook may reverse is a warning that still
		// explains the controller's strict error.
		explained = explained || f.Detector == Undefined || (!f.warn() && f.Detector == ParseError)
	}
	for _, e := range slices.Sorted(maps.Keys(s.controllerErrs)) {
		badName := strings.Contains(e, "var name is invalid")
		if (badName || !explained) && s.o.on(Undefined) && s.o.on(ParseError) {
			out = append(out, at(s.k.Location, verify.Finding{Detector: ParseError, Message: fmt.Sprintf("kustomize-controller's substitution fails Kustomization %s: %s", s.k.Ref(), e),
				Fix: "fix the variable names of " + s.from + " (letters, digits and _, not starting with a digit) or the expression named"}))
			if badName {
				break // the same error for every object
			}
		}
	}
	return out
}
