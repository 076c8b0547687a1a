package converge

import (
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

// State is what a node is doing (fluxobj's classifier decides it).
type State = fluxobj.State

// States (fluxobj's). Converged is the only success; Failing may be
// transient (it gets a retry budget); Terminal never recovers without a
// person.
const (
	Converged   = fluxobj.Converged
	Pending     = fluxobj.Pending
	Progressing = fluxobj.Progressing
	Stale       = fluxobj.Stale
	Blocked     = fluxobj.Blocked
	Failing     = fluxobj.Failing
	Terminal    = fluxobj.Terminal
)

// Source is what the classifier reads of a node's source.
type Source = fluxobj.SourceState

// Status is one classification of a node.
type Status = fluxobj.Verdict

// convergedClauses is a Kustomization's converged predicate, the model's
// (fluxobj.KustomizationRules: not suspended, the generic ReadyClauses,
// source Ready with an artifact, applied its source's revision). Each is
// proven load-bearing by TestEveryClauseIsLoadBearing.
var convergedClauses = fluxobj.KustomizationRules

// IsConverged is the converged predicate: the Kustomization exists, is not
// suspended, observed its generation, is Ready=True at that generation and
// neither Reconciling nor Stalled, and applied its own source's current
// artifact revision (the source being Ready at its generation).
func IsConverged(k *kustomizev1.Kustomization, src Source) bool {
	return Classify(k, src).State == Converged
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

// Classify says what a node is doing (fluxobj.ClassifyKustomization).
func Classify(k *kustomizev1.Kustomization, src Source) Status {
	return fluxobj.ClassifyKustomization(k, src)
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
