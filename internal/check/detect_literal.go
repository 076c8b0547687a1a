package check

import (
	"fmt"

	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detLiteral is the [literal] row of the table of detectors.
var detLiteral = detector{ID: Literal, Gate: Substitution, Advisory: true,
	Short:   "${…} that nothing substitutes: the literal ships",
	Rule:    "fluxcd/pkg/kustomize v1.35.6 SubstituteVariables: without spec.postBuild, or with the object labelled kustomize.toolkit.fluxcd.io/substitute: disabled, ${…} is applied as written",
	Emitted: "substitution.literals, on each object of substitution.object's scan (subst.go); knobLiterals, from literalCheck (subst.go)",
}

// literals are the [literal] findings of r, whose Kustomization
// substitutes from nothing (no variables, no substituteStrategy: Always):
// the controller does not substitute, so every ${…} of text (r's YAML)
// ships as written.
func (s *substitution) literals(r *resource.Resource, text string) []finding {
	if !s.o.on(Literal) {
		return nil
	}
	var out []finding
	for _, e := range expressions(text) {
		if unread(r, e.search) != "" {
			continue // a commented-out line, a CRD description
		}
		out = append(out, located(s.env, s.k, r, literal(e,
			fmt.Sprintf("%s in %s: Kustomization %s substitutes from %s (no variables), so nothing is substituted and it ships literally", e.show, s.objName(r), s.k.Ref(), s.from),
			"render the substituteFrom objects in this environment, or set postBuild.substituteStrategy: Always, or escape it as $"+e.show)))
	}
	return out
}

// knobLiterals are the [literal] findings of r, an object of Kustomization
// k, which has no postBuild: it ships ${…} literally. Most such ${…} are
// meant so (a shell variable of a script, a template some program fills
// in): only one whose variable is a knob of the environment (knobs, from
// envKnobs), which another Kustomization substitutes, is named — a likely
// forgotten postBuild.
func knobLiterals(o Options, env *fluxrepo.Env, k *fluxrepo.Kustomization, r *resource.Resource, knobs map[string]string) []finding {
	// CRDs carry ${…} in their descriptions on purpose.
	if !o.on(Literal) || r.GetKind() == "CustomResourceDefinition" || fluxrepo.SubstitutionDisabled(r) {
		return nil
	}
	if !fluxrepo.WritesDollar(r) {
		return nil // its YAML holds no ${…}: nothing below to find
	}
	y, err := r.AsYAML()
	if err != nil {
		return nil
	}
	var out []finding
	for _, e := range expressions(string(y)) {
		where, knob := knobs[e.name]
		if !knob || unread(r, e.search) != "" {
			continue
		}
		out = append(out, located(env, k, r, literal(e,
			fmt.Sprintf("%s in %s: Kustomization %s has no postBuild, so it ships literally, though %s is a knob of the environment (%s)", e.show, objName(r), k.Ref(), e.name, where),
			fmt.Sprintf("add spec.postBuild.substituteFrom to Kustomization %s, or escape it as $%s", k.Ref(), e.show))))
	}
	return out
}

// literal is the draft of the [literal] finding of expression e.
func literal(e expr, what, fix string) finding {
	return finding{Finding: verify.Finding{Detector: Literal, Verdict: verify.Warn, Cause: e.show + " ships literally: nothing substitutes it", Message: what, Fix: fix}, search: e.search}
}
