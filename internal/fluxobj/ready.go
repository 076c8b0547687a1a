package fluxobj

import (
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Object is a Flux API object with conditions.
type Object interface {
	client.Object
	conditions.Getter
}

// ReadyClause is one clause of the generic readiness rule.
type ReadyClause struct {
	ID    Clause
	Holds func(Object) bool
}

// ReadyClauses are the generic clauses of "Ready at its generation", in
// the order they are reported, each read with fluxcd/pkg/runtime/conditions
// (not kstatus: it calls an object with no conditions Current):
// status.observedGeneration is the generation (for kinds that record one),
// Ready=True observed at that generation, not Reconciling, not Stalled.
var ReadyClauses = []ReadyClause{
	{ClauseObservedGeneration, func(o Object) bool {
		g, ok := ObservedGeneration(o)
		return !ok || g == o.GetGeneration()
	}},
	{ClauseReadyAtGeneration, func(o Object) bool {
		c := conditions.Get(o, meta.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == o.GetGeneration()
	}},
	{ClauseNotReconciling, func(o Object) bool { return !conditions.IsReconciling(o) }},
	{ClauseNotStalled, func(o Object) bool { return !conditions.IsStalled(o) }},
}

// Ready says whether o is Ready at its generation (every ReadyClauses
// clause holds) and describes its state for messages: the Ready
// condition, and the first clause that does not hold.
func Ready(o Object) (bool, string) {
	c := conditions.Get(o, meta.ReadyCondition)
	if c == nil {
		return false, "no Ready condition yet"
	}
	gen := o.GetGeneration()
	desc := fmt.Sprintf("Ready=%s %s (generation %d observed %d): %s", c.Status, c.Reason, gen, c.ObservedGeneration, c.Message)
	for _, cl := range ReadyClauses {
		if !cl.Holds(o) {
			if cl.ID != ClauseReadyAtGeneration {
				desc += "; not " + string(cl.ID)
			}
			return false, desc
		}
	}
	return true, desc
}

// Failed says o's last reconcile failed, as opposed to not having ended:
// Stalled, or Ready=False at its generation while Reconciling is absent or
// says the controller retries (fluxcd/pkg/runtime's summarize:
// ProgressingWithRetry marks a failure the controller will retry).
func Failed(o Object) bool {
	if conditions.IsStalled(o) {
		return true
	}
	c := conditions.Get(o, meta.ReadyCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != o.GetGeneration() {
		return false
	}
	return !conditions.IsReconciling(o) || conditions.GetReason(o, meta.ReconcilingCondition) == meta.ProgressingWithRetryReason
}

// ObservedGeneration is o's status.observedGeneration; false for a kind
// that records none (ExternalArtifact, an object of another API).
func ObservedGeneration(o Object) (int64, bool) {
	switch t := o.(type) {
	case *kustomizev1.Kustomization:
		return t.Status.ObservedGeneration, true
	case *helmv2.HelmRelease:
		return t.Status.ObservedGeneration, true
	case *sourcev1.GitRepository:
		return t.Status.ObservedGeneration, true
	case *sourcev1.OCIRepository:
		return t.Status.ObservedGeneration, true
	case *sourcev1.Bucket:
		return t.Status.ObservedGeneration, true
	case *sourcev1.HelmRepository:
		return t.Status.ObservedGeneration, true
	case *sourcev1.HelmChart:
		return t.Status.ObservedGeneration, true
	}
	return 0, false
}

// Suspended says o's spec.suspend is true (ExternalArtifact has none).
func Suspended(o Object) bool {
	switch t := o.(type) {
	case *kustomizev1.Kustomization:
		return t.Spec.Suspend
	case *helmv2.HelmRelease:
		return t.Spec.Suspend
	case *sourcev1.GitRepository:
		return t.Spec.Suspend
	case *sourcev1.OCIRepository:
		return t.Spec.Suspend
	case *sourcev1.Bucket:
		return t.Spec.Suspend
	case *sourcev1.HelmRepository:
		return t.Spec.Suspend
	case *sourcev1.HelmChart:
		return t.Spec.Suspend
	}
	return false
}

// ArtifactRevision is the revision of a source's current artifact; "" when
// it has none or o is not a source.
func ArtifactRevision(o Object) string {
	if s, ok := o.(sourcev1.Source); ok {
		if a := s.GetArtifact(); a != nil {
			return a.Revision
		}
	}
	return ""
}

// AppliedRevision is this tool's own revision clause for a Kustomization:
// it applied rev (status.lastAppliedRevision), the revision of its
// source's current artifact.
func AppliedRevision(k *kustomizev1.Kustomization, rev string) bool {
	return k.Status.LastAppliedRevision == rev
}
