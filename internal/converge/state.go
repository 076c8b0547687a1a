package converge

import (
	"fmt"
	"slices"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

// State is what a node is doing, from its live object and its source.
type State string

// States. Converged is the only success; Failing may be transient (it gets
// a retry budget); Terminal never recovers without a person.
const (
	// Converged: Ready at its generation and at its source's current revision.
	Converged State = "converged"
	// Pending: the Kustomization does not exist (yet).
	Pending State = "pending"
	// Progressing: created and being reconciled, or not reconciled yet.
	Progressing State = "progressing"
	// Stale: Ready, but observed at an old generation, or at an old source
	// revision, or its source is not Ready.
	Stale State = "stale"
	// Blocked: Ready=False DependencyNotReady.
	Blocked State = "blocked"
	// Failing: Ready=False for a build, apply, health, prune or artifact failure.
	Failing State = "failing"
	// Terminal: Stalled=True, or suspended.
	Terminal State = "terminal"
)

// failingReasons are the Ready=False reasons of a failed reconcile.
var failingReasons = []string{
	meta.BuildFailedReason, meta.ReconciliationFailedReason, meta.HealthCheckFailedReason,
	meta.PruneFailedReason, meta.ArtifactFailedReason,
}

// Source is what the predicate reads of a node's source.
type Source struct {
	Ref SourceRef
	// Found says the source object exists.
	Found bool
	// Ready is Ready=True at its generation and not Stalled.
	Ready bool
	// Revision is its current artifact's revision ("" without an artifact).
	Revision string
	// Failed: its last reconcile failed (Ready=False while retrying, or
	// Stalled), as opposed to not done yet.
	Failed bool
	// Desc describes its state for evidence.
	Desc string
}

// Status is one classification of a node.
type Status struct {
	State State
	// Why says, in a few words, why the node is in this state.
	Why string
	// Reason and Message are the Ready condition's ("" without one).
	Reason, Message string
	// Current says a failure happened at the node's generation and at its
	// source's current revision: it counts against the retry budget. A
	// failure at an older revision or generation does not.
	Current bool
	// Applied, Attempted and Want are the last applied and attempted
	// revisions and the source's current revision.
	Applied, Attempted, Want string
	// Generation and ObservedGeneration of the object.
	Generation, ObservedGeneration int64
	// Handled is status.lastHandledReconcileAt.
	Handled string
}

// clause is one clause of the converged predicate.
type clause struct {
	name  string
	holds func(k *kustomizev1.Kustomization, src Source) bool
}

// convergedClauses is the converged predicate: every clause must hold. Each
// is proven load-bearing by TestEveryClauseIsLoadBearing. Existence is not a
// clause: a missing object is never converged (holds checks it first). The
// generic clauses are the model's (fluxobj.ReadyClauses: observed
// generation, Ready at it, not Reconciling, not Stalled); the source and
// revision clauses are this tool's (fluxobj.AppliedRevision).
var convergedClauses = kustomizationClauses()

func kustomizationClauses() []clause {
	cs := []clause{{"not suspended", func(k *kustomizev1.Kustomization, _ Source) bool { return !fluxobj.Suspended(k) }}}
	for _, c := range fluxobj.ReadyClauses {
		cs = append(cs, clause{c.Name, func(k *kustomizev1.Kustomization, _ Source) bool { return c.Holds(k) }})
	}
	return append(cs,
		clause{"source Ready with an artifact", func(_ *kustomizev1.Kustomization, s Source) bool {
			return s.Found && s.Ready && s.Revision != ""
		}},
		clause{"applied its source's revision", func(k *kustomizev1.Kustomization, s Source) bool {
			return fluxobj.AppliedRevision(k, s.Revision)
		}},
	)
}

// IsConverged is the converged predicate: the Kustomization exists, is not
// suspended, observed its generation, is Ready=True at that generation and
// neither Reconciling nor Stalled, and applied its own source's current
// artifact revision (the source being Ready at its generation).
func IsConverged(k *kustomizev1.Kustomization, src Source) bool {
	ok, _ := holds(convergedClauses, k, src)
	return ok
}

// Describe says, for a wait's progress and its timeout message, what a
// Kustomization is doing against src: its state, why, and its revisions.
func Describe(k *kustomizev1.Kustomization, src Source) string {
	st := Classify(k, src)
	d := fmt.Sprintf("%s: %s", st.State, st.Why)
	if st.Reason != "" {
		d += fmt.Sprintf(" (Ready %s: %s)", st.Reason, st.Message)
	}
	return d + fmt.Sprintf("; lastAppliedRevision=%s, source at %s", orNone(st.Applied), orNone(src.Revision))
}

// holds evaluates clauses in order; on failure it names the first that
// does not hold.
func holds(cs []clause, k *kustomizev1.Kustomization, src Source) (bool, string) {
	if k == nil {
		return false, "exists"
	}
	for _, c := range cs {
		if !c.holds(k, src) {
			return false, c.name
		}
	}
	return true, ""
}

// Classify says what a node is doing.
func Classify(k *kustomizev1.Kustomization, src Source) Status {
	return classify(convergedClauses, k, src)
}

func classify(cs []clause, k *kustomizev1.Kustomization, src Source) Status {
	st := Status{Want: src.Revision}
	if k == nil {
		st.State, st.Why = Pending, "not created yet"
		return st
	}
	st.Applied, st.Attempted = k.Status.LastAppliedRevision, k.Status.LastAttemptedRevision
	st.Generation, st.ObservedGeneration = k.Generation, k.Status.ObservedGeneration
	st.Handled = k.Status.LastHandledReconcileAt
	ready := conditions.Get(k, meta.ReadyCondition)
	if ready != nil {
		st.Reason, st.Message = ready.Reason, ready.Message
	}
	ok, failed := holds(cs, k, src)
	if ok {
		st.State, st.Why = Converged, "applied "+src.Revision
		return st
	}
	switch {
	case k.Spec.Suspend:
		st.State, st.Why = Terminal, "suspended (spec.suspend: true): resume it or remove it from the environment"
	case conditions.IsStalled(k):
		st.State = Terminal
		st.Why = fmt.Sprintf("stalled: %s: %s", conditions.GetReason(k, meta.StalledCondition), conditions.GetMessage(k, meta.StalledCondition))
	case ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == meta.DependencyNotReadyReason:
		st.State, st.Why = Blocked, ready.Message
	case ready != nil && ready.Status == metav1.ConditionFalse:
		// A known failure reason, or one this tool does not know: both
		// fail closed (an unknown reason is not progress).
		st.State = Failing
		st.Why = ready.Reason + ": " + ready.Message
		if !slices.Contains(failingReasons, ready.Reason) {
			st.Why = "Ready=False " + st.Why
		}
		st.Current = ready.ObservedGeneration == k.Generation && src.Revision != "" && k.Status.LastAttemptedRevision == src.Revision
	case ready == nil:
		st.State, st.Why = Progressing, "not reconciled yet (no Ready condition)"
	case conditions.IsReconciling(k) || ready.Status == metav1.ConditionUnknown:
		st.State, st.Why = Progressing, "reconciling: "+ready.Message
	case failed == "observed its generation" && ready.ObservedGeneration == k.Generation:
		// Ready already speaks of this generation: the controller is
		// finishing its status update (kustomize-controller passes through
		// status.observedGeneration -1 on its way to success).
		st.State = Progressing
		st.Why = fmt.Sprintf("finishing: Ready at generation %d, status.observedGeneration still %d", k.Generation, k.Status.ObservedGeneration)
	default:
		st.State = Stale
		switch failed {
		case "source Ready with an artifact":
			st.Why = "Ready, but its source " + src.Ref.String() + " is not: " + src.Desc
		case "applied its source's revision":
			st.Why = fmt.Sprintf("Ready at %s, its source is at %s", orNone(st.Applied), src.Revision)
		default:
			st.Why = fmt.Sprintf("Ready, but not %s (generation %d, observed %d, Ready observed %d)", failed, k.Generation, k.Status.ObservedGeneration, ready.ObservedGeneration)
		}
	}
	return st
}

// Evidence describes a node's live state: generations, conditions,
// revisions and its source.
func Evidence(k *kustomizev1.Kustomization, src Source) []string {
	if k == nil {
		return []string{"Kustomization not found", "source " + src.Ref.String() + ": " + src.Desc}
	}
	out := []string{fmt.Sprintf("generation %d, status.observedGeneration %d", k.Generation, k.Status.ObservedGeneration)}
	for _, t := range []string{meta.ReadyCondition, meta.ReconcilingCondition, meta.StalledCondition} {
		if c := conditions.Get(k, t); c != nil {
			out = append(out, fmt.Sprintf("%s=%s %s (observedGeneration %d): %s", t, c.Status, c.Reason, c.ObservedGeneration, c.Message))
		}
	}
	out = append(out, fmt.Sprintf("lastAppliedRevision %s, lastAttemptedRevision %s, expected %s",
		orNone(k.Status.LastAppliedRevision), orNone(k.Status.LastAttemptedRevision), orNone(src.Revision)))
	out = append(out, "source "+src.Ref.String()+": "+src.Desc)
	if k.Spec.Suspend {
		out = append(out, "spec.suspend: true")
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
