package fluxobj

import (
	"context"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/cel"
	"github.com/fluxcd/pkg/runtime/conditions"
	celtypes "github.com/google/cel-go/common/types"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/homelab-ops/bootstrap/pkg/patches"
)

// AdditiveCELDependencyCheck is the feature gate (helm-controller and
// kustomize-controller, off by default) that runs the built-in readiness
// check of a dependency beside its readyExpr instead of replacing it.
const AdditiveCELDependencyCheck = patches.AdditiveCELDependencyCheck

// HelmReleaseWaitReasons are the Ready=False reasons with which
// helm-controller waits rather than fails: a dependency not ready
// (DependencyNotReady, requeued after --requeue-dependency) and a chart
// source not ready yet (SourceNotReady, woken by the source's watch).
// helm-controller's reconcile in internal/controller/helmrelease_controller.go.
var HelmReleaseWaitReasons = []string{helmv2.DependencyNotReadyReason, SourceNotReadyReason}

// SourceNotReadyReason is the Ready=False reason helm-controller gives a
// HelmRelease whose chart source is not ready (its reconcile spells it out;
// the API declares no constant for it).
const SourceNotReadyReason = "SourceNotReady"

// CompileReadyExpr compiles a dependsOn readyExpr with helm-controller's
// CEL environment (evalReadyExpr: variables self and dep, a bool result);
// an error is what helm-controller marks Stalled with InvalidCELExpression.
func CompileReadyExpr(expr string) (*cel.Expression, error) {
	return cel.NewExpression(expr,
		cel.WithCompile(),
		cel.WithOutputType(celtypes.BoolType),
		cel.WithStructVariables("self", "dep"))
}

// HelmReleaseDependencyReady is helm-controller's checkDependencies for one
// dependsOn entry ref of self, given the dependency's live object dep:
// with a readyExpr, the expression evaluated over self and dep must be
// true; without one (or with one and additiveCEL, the
// AdditiveCELDependencyCheck gate) dep must also have observed its
// generation and be Ready=True. No revision is compared, unlike
// kustomize-controller. The error is an expression that does not compile
// or evaluate (helm-controller stalls on the former). Read in
// helm-controller v1.6.4 internal/controller/helmrelease_controller.go
// checkDependencies and evalReadyExpr.
func HelmReleaseDependencyReady(ctx context.Context, self, dep *helmv2.HelmRelease, ref meta.DependencyReference, additiveCEL bool) (bool, error) {
	if dep == nil {
		return false, nil
	}
	if ref.ReadyExpr != "" {
		expr, err := CompileReadyExpr(ref.ReadyExpr)
		if err != nil {
			return false, fmt.Errorf("HelmRelease %s/%s: dependsOn %s readyExpr: %w", self.Namespace, self.Name, ref.Name, err)
		}
		selfMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(self)
		if err != nil {
			return false, err
		}
		depMap, err := runtime.DefaultUnstructuredConverter.ToUnstructured(dep)
		if err != nil {
			return false, err
		}
		ok, err := expr.EvaluateBoolean(ctx, map[string]any{"self": selfMap, "dep": depMap})
		if err != nil || !ok {
			return false, err
		}
		if !additiveCEL {
			return true, nil
		}
	}
	return dep.Generation == dep.Status.ObservedGeneration && conditions.IsTrue(dep, meta.ReadyCondition), nil
}
