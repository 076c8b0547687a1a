package check

import (
	"fmt"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/envsubst/parse"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detUndefined is the [undefined] row of the table of detectors.
var detUndefined = detector{ID: Undefined, Gate: Substitution, Advisory: false,
	Short:   "undefined variable: strict post-build substitution fails the whole Kustomization; without it, it renders empty (fail open)",
	Rule:    "fluxcd/pkg/kustomize v1.35.6 SubstituteVariables with fluxcd/pkg/envsubst v1.7.1 strict mode (kustomize-controller v1.9.5 --feature-gates StrictPostBuildSubstitutions): an unset variable fails the build",
	Emitted: "substitution.undefined, on each expression of substitution.object's scan (subst.go)",
}

// undefined is the [undefined] finding of the expression n of r, a form
// without a default operator whose variable the Kustomization does not
// define: a defect either way — strict, the controller fails the
// Kustomization; not strict, it reports Ready and the object ships an
// empty value (the seed's fail-open incident).
func (s *substitution) undefined(r *resource.Resource, n *parse.FuncNode) []finding {
	o, k, from := s.o, s.k, s.from
	if s.defined(n.Param) || !o.on(Undefined) {
		return nil
	}
	expr := "${" + n.Param + n.Name
	search := expr
	if n.Name == "" {
		// The whole ${X}: the prefix ${X would match ${X_LONGER}.
		search += "}"
	}
	// Text no program reads (a commented-out line of an embedded file, a
	// CRD's description).
	quiet := unread(r, search)
	what := fmt.Sprintf("${%s} in %s is not defined (substitutes from %s): strict substitution fails the whole Kustomization %s", n.Param, s.objName(r), from, k.Ref())
	if quiet != "" {
		// The controller's strict envsubst fails on it wherever it
		// stands: still a defect.
		what = fmt.Sprintf("${%s} in %s (%s) is not defined (substitutes from %s): though nothing reads it there, strict substitution fails the whole Kustomization %s", n.Param, s.objName(r), quiet, from, k.Ref())
	}
	v := verify.Fail
	if !o.strict.on {
		// Fail open, the controller reports Ready and applies the
		// object with the value emptied: an advisory — unless the
		// emptied value is a name the API server refuses, which
		// fails the apply (the Kustomization's dry run).
		what = fmt.Sprintf("${%s} in %s is not defined (substitutes from %s): it renders empty: fail open on this release — %s, so Kustomization %s reports Ready and applies %s with an empty value; a release with strict substitution fails it", n.Param, s.objName(r), from, o.strict.why, k.Ref(), s.objName(r))
		v = verify.Warn
		if bad := s.refusedName(r); bad != "" {
			v = verify.Fail
			what = fmt.Sprintf("${%s} in %s is not defined (substitutes from %s): it renders empty (fail open on this release — %s), and %s: the API server refuses it, so Kustomization %s fails its apply", n.Param, s.objName(r), from, o.strict.why, bad, k.Ref())
		}
		if quiet != "" {
			// Fail open, it renders empty where nothing reads it: an
			// advisory (a release that turns strict on fails it).
			v = verify.Warn
			what = fmt.Sprintf("${%s} in %s (%s) is not defined (substitutes from %s): it renders empty there, where nothing reads it — fail open on this release (%s); a release with strict substitution fails Kustomization %s on it", n.Param, s.objName(r), quiet, from, o.strict.why, k.Ref())
		}
	}
	if by := mutating(o.mutators, k); by != "" && v != verify.Warn {
		// An admission webhook may write the variable into the
		// Kustomization's postBuild: a verdict it could reverse is
		// not a failure (issue 54 item 6).
		v = verify.Warn
		what += fmt.Sprintf(" — unless %s defines it: it mutates Kustomizations at admission, which this check cannot see, so it is not judged a failure", by)
	}
	// Located by the whole ${X}: the prefix ${X would match an
	// earlier ${X_longer:=…} (containsUnescaped matches substrings).
	return []finding{located(s.env, k, r, finding{Finding: verify.Finding{Detector: Undefined, Verdict: v, Cause: "${" + n.Param + "} is not defined", Message: what,
		CauseFix: fmt.Sprintf("define %s in the postBuild (substitute or substituteFrom) of each Kustomization named, or escape it as $${%s} if it is meant literally", n.Param, n.Param),
		Fix:      fmt.Sprintf("define %s in %s, or escape it as $${%s} if it is meant literally", n.Param, from, n.Param)}, search: expr + "}"})}
}

// refusedName says how r's name or namespace, as the controller renders
// them without strict substitution (an undefined variable empty), is one
// the API server refuses ("" when both are valid, or hold no ${…}):
// apimachinery's name rules, DNS-1123 subdomain for a name (the rule most
// kinds validate with; ValidateObjectMeta) and label for a namespace.
func (s *substitution) refusedName(r *resource.Resource) string {
	render := func(v string) string {
		// Not strict: an undefined variable is the empty string.
		out, err := envsubst.Eval(v, func(k string) (string, bool) { return s.vars[k], true })
		if err != nil {
			return v
		}
		return out
	}
	if n := r.GetName(); strings.Contains(n, "${") {
		if out := render(n); len(validation.IsDNS1123Subdomain(out)) > 0 {
			return fmt.Sprintf("its name renders %q, which is not a valid name", out)
		}
	}
	if ns := r.GetNamespace(); strings.Contains(ns, "${") {
		if out := render(ns); len(validation.IsDNS1123Label(out)) > 0 {
			return fmt.Sprintf("its namespace renders %q, which is not a valid namespace", out)
		}
	}
	return ""
}
