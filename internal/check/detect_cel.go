package check

import (
	"fmt"

	"github.com/fluxcd/pkg/runtime/cel"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detBadCEL is the [cel] row of the table of detectors.
var detBadCEL = detector{ID: BadCEL, Gate: CEL, Advisory: false,
	Short:   "readyExpr or healthCheckExprs the controller cannot compile: the object stalls",
	Rule:    "kustomize-controller v1.9.5 and helm-controller v1.6.4 compile readyExpr (dependsOn) and healthCheckExprs with fluxcd/pkg/runtime/cel: a failure is InvalidCELExpression, stalled",
	Emitted: "checkCEL",
}

// checkCEL is check.cel: every CEL expression of the environment's Flux
// objects compiled as its controller compiles it (kustomize-controller
// v1.9.5 and helm-controller v1.6.4):
//   - dependsOn[].readyExpr of a Kustomization or HelmRelease: variables
//     self and dep, a bool result (evalReadyExpr in both controllers;
//     fluxobj.CompileReadyExpr) — a failure is a terminal error that
//     stalls the dependent;
//   - a Kustomization's healthCheckExprs: fluxcd/pkg/runtime/cel's
//     NewStatusReader, which kustomize-controller calls first in every
//     reconcile and stalls on with InvalidCELExpression.
func checkCEL(ch *checker, o Options, env *fluxrepo.Env) verify.Check {
	var fs []finding
	n := 0
	readyExpr := func(kind, ref string, loc fluxrepo.Location, dep, expr string) {
		n++
		if _, err := fluxobj.CompileReadyExpr(expr); err != nil && o.on(BadCEL) {
			fs = append(fs, at(entryLocation(env, loc, dep, "readyExpr", "spec", "dependsOn"), verify.Finding{Detector: BadCEL,
				Message: fmt.Sprintf("%s %s: dependsOn %s readyExpr does not compile (%v): the controller stalls it (InvalidCELExpression) and it never becomes Ready", kind, ref, dep, err),
				Fix:     "write a CEL expression over self and dep that returns a bool, e.g. dep.status.conditions.filter(c, c.type == 'Ready').all(c, c.status == 'True')"}))
		}
	}
	for _, k := range env.Kustomizations {
		for _, d := range k.Spec.DependsOn {
			if d.ReadyExpr != "" {
				readyExpr("Kustomization", k.Ref(), k.Location, d.Name, d.ReadyExpr)
			}
		}
		if len(k.Spec.HealthCheckExprs) > 0 {
			n += len(k.Spec.HealthCheckExprs)
			if _, err := cel.NewStatusReader(k.Spec.HealthCheckExprs); err != nil && o.on(BadCEL) {
				fs = append(fs, at(fieldLocation(env, k.Location, "spec", "healthCheckExprs"), verify.Finding{Detector: BadCEL,
					Message: fmt.Sprintf("Kustomization %s: healthCheckExprs: %v: kustomize-controller stalls it (InvalidCELExpression) before applying anything", k.Ref(), err),
					Fix:     "fix the expression (current is required; one entry per apiVersion/kind)"}))
			}
		}
	}
	for _, h := range env.HelmReleases {
		for _, d := range h.Spec.DependsOn {
			if d.ReadyExpr != "" {
				readyExpr("HelmRelease", h.Ref(), h.Location, d.Name, d.ReadyExpr)
			}
		}
	}
	return ch.verdict(CEL, fs, fmt.Sprintf("%d CEL expression(s) compile in their controller's environment", n))
}
