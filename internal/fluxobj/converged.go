package fluxobj

import (
	"fmt"
	"slices"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Clause identifies one clause of a "converged at revision" predicate. Its
// value is the words messages use; code compares the constants, never the
// words (TestClauseNamesOnlyHere).
type Clause string

// The clauses, in the order the predicates evaluate them.
const (
	// ClauseExists: the object exists (never a predicate entry: a missing
	// object fails it first).
	ClauseExists Clause = "exists"
	// ClauseNotSuspended: spec.suspend is not true.
	ClauseNotSuspended Clause = "not suspended"
	// ClauseObservedGeneration: status.observedGeneration is the generation.
	ClauseObservedGeneration Clause = "observed its generation"
	// ClauseReadyAtGeneration: Ready=True observed at the generation.
	ClauseReadyAtGeneration Clause = "Ready=True at its generation"
	// ClauseNotReconciling: no Reconciling=True.
	ClauseNotReconciling Clause = "not reconciling"
	// ClauseNotStalled: no Stalled=True.
	ClauseNotStalled Clause = "not stalled"
	// ClauseSourceReady: a Kustomization's source is Ready with an artifact.
	ClauseSourceReady Clause = "source Ready with an artifact"
	// ClauseAppliedRevision: a Kustomization applied its source's current
	// revision (AppliedRevision).
	ClauseAppliedRevision Clause = "applied its source's revision"
	// ClauseChartSourceReady: a HelmRelease's chart source is Ready with an
	// artifact.
	ClauseChartSourceReady Clause = "chart source Ready with an artifact"
	// ClauseReleasedChart: a HelmRelease's newest release was made from its
	// source's current artifact (HelmReleaseAtRevision).
	ClauseReleasedChart Clause = "released its source's chart"
)

// Clauses are every clause, for tests that look for their words elsewhere.
var Clauses = []Clause{
	ClauseExists, ClauseNotSuspended, ClauseObservedGeneration, ClauseReadyAtGeneration,
	ClauseNotReconciling, ClauseNotStalled, ClauseSourceReady, ClauseAppliedRevision,
	ClauseChartSourceReady, ClauseReleasedChart,
}

// State is what a Kustomization or HelmRelease is doing, from its live
// object and its source.
type State string

// States. Converged is the only success; Failing may be transient (it gets
// a retry budget); Terminal never recovers without a person.
const (
	// Converged: Ready at its generation and at its source's current revision.
	Converged State = "converged"
	// Pending: the object does not exist (yet).
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

// SourceState is what the classifier reads of an object's source.
type SourceState struct {
	Ref Ref
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

// Verdict is one classification of an object.
type Verdict struct {
	State State
	// Why says, in a few words, why the object is in this state.
	Why string
	// Reason and Message are the Ready condition's ("" without one).
	Reason, Message string
	// Current says a failure happened at the object's generation and at its
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

// Rule is one clause of a converged predicate over an object and its source.
type Rule struct {
	ID    Clause
	Holds func(o Object, src SourceState) bool
}

// sourceReady is the source clause of both kinds: the source exists, is
// Ready, and serves an artifact.
func sourceReady(_ Object, s SourceState) bool { return s.Found && s.Ready && s.Revision != "" }

// predicate is not suspended, then the generic ReadyClauses, then tail.
func predicate(tail ...Rule) []Rule {
	rs := []Rule{{ClauseNotSuspended, func(o Object, _ SourceState) bool { return !Suspended(o) }}}
	for _, c := range ReadyClauses {
		rs = append(rs, Rule{c.ID, func(o Object, _ SourceState) bool { return c.Holds(o) }})
	}
	return append(rs, tail...)
}

// KustomizationRules is a Kustomization's converged predicate: not
// suspended, the generic ReadyClauses (as kustomize-controller's
// checkDependencies reads a dependency: observed generation and Ready=True),
// its source Ready with an artifact, and this tool's revision clause
// (AppliedRevision). converge's TestEveryClauseIsLoadBearing proves each
// clause load-bearing.
var KustomizationRules = predicate(
	Rule{ClauseSourceReady, sourceReady},
	Rule{ClauseAppliedRevision, func(o Object, s SourceState) bool {
		k, ok := o.(*kustomizev1.Kustomization)
		return ok && AppliedRevision(k, s.Revision)
	}},
)

// HelmReleaseRules is a HelmRelease's converged predicate (helm-controller
// v1.6.4): not suspended, the generic ReadyClauses, its chart source Ready
// with an artifact, and its newest Helm release made from that artifact
// (HelmReleaseAtRevision). converge's TestHelmReleaseClausesLoadBearing
// proves each clause load-bearing.
var HelmReleaseRules = predicate(
	Rule{ClauseChartSourceReady, sourceReady},
	Rule{ClauseReleasedChart, func(o Object, s SourceState) bool {
		hr, ok := o.(*helmv2.HelmRelease)
		return ok && HelmReleaseAtRevision(hr, s.Ref.Kind, s.Revision)
	}},
)

// Holds evaluates rules in order on o (nil: it does not exist); on failure
// it names the first clause that does not hold.
func Holds(rules []Rule, o Object, src SourceState) (bool, Clause) {
	if o == nil {
		return false, ClauseExists
	}
	for _, r := range rules {
		if !r.Holds(o, src) {
			return false, r.ID
		}
	}
	return true, ""
}

// kustomizeFailingReasons are the Ready=False reasons of a failed
// Kustomization reconcile (kustomize-controller's); another reason still
// fails, named as a Ready=False this tool does not know.
var kustomizeFailingReasons = []string{
	meta.BuildFailedReason, meta.ReconciliationFailedReason, meta.HealthCheckFailedReason,
	meta.PruneFailedReason, meta.ArtifactFailedReason,
}

// ClassifyKustomization says what k (nil: not created) is doing against
// its source src.
func ClassifyKustomization(k *kustomizev1.Kustomization, src SourceState) Verdict {
	if k == nil {
		return classify(nil, src)
	}
	return classify(k, src)
}

// ClassifyHelmRelease says what hr (nil: not created) is doing against its
// chart source src, in the states a Kustomization has: Ready=False
// DependencyNotReady is Blocked (helm-controller requeues it after
// --requeue-dependency, nothing watches the dependency); a chart source
// that is not ready is a wait while the source is still working, and a
// failure (counted against --fail-after) when the source itself failed or
// does not exist; Stalled (remediation retries exhausted, an invalid CEL
// expression, access denied) and suspended are Terminal; any other
// Ready=False is Failing, with helm-controller's remediation counters in
// the reason.
func ClassifyHelmRelease(hr *helmv2.HelmRelease, src SourceState) Verdict {
	if hr == nil {
		return classify(nil, src)
	}
	return classify(hr, src)
}

// classify is the one classifier of both kinds: a Kustomization or a
// HelmRelease o (nil: not created) against its source.
func classify(o Object, src SourceState) Verdict {
	st := Verdict{Want: src.Revision}
	if o == nil {
		st.State, st.Why = Pending, "not created yet"
		return st
	}
	_, isHR := o.(*helmv2.HelmRelease)
	rules, remediation := KustomizationRules, ""
	switch t := o.(type) {
	case *kustomizev1.Kustomization:
		st.Applied, st.Attempted = t.Status.LastAppliedRevision, t.Status.LastAttemptedRevision
		st.ObservedGeneration, st.Handled = t.Status.ObservedGeneration, t.Status.LastHandledReconcileAt
	case *helmv2.HelmRelease:
		rules, remediation = HelmReleaseRules, HelmReleaseRemediation(t)
		if latest := t.Status.History.Latest(); latest != nil {
			st.Applied = latest.ChartVersion
			if latest.OCIDigest != "" {
				st.Applied += "@" + latest.OCIDigest
			}
		}
		st.Attempted = t.Status.LastAttemptedRevision
		st.ObservedGeneration, st.Handled = t.Status.ObservedGeneration, t.Status.LastHandledReconcileAt
	}
	st.Generation = o.GetGeneration()
	ready := conditions.Get(o, meta.ReadyCondition)
	if ready != nil {
		st.Reason, st.Message = ready.Reason, ready.Message
	}
	ok, failed := Holds(rules, o, src)
	if ok {
		st.State, st.Why = Converged, "applied "+src.Revision
		if isHR {
			st.Why = "released " + orNone(st.Applied) + " from " + src.Revision
		}
		return st
	}
	readyFalse := ready != nil && ready.Status == metav1.ConditionFalse
	atGen := ready != nil && ready.ObservedGeneration == st.Generation
	switch {
	case Suspended(o):
		st.State, st.Why = Terminal, "suspended (spec.suspend: true): resume it or remove it from the environment"
	case conditions.IsStalled(o):
		st.State = Terminal
		st.Why = fmt.Sprintf("stalled: %s: %s%s", conditions.GetReason(o, meta.StalledCondition), conditions.GetMessage(o, meta.StalledCondition), remediation)
	case readyFalse && ready.Reason == meta.DependencyNotReadyReason:
		st.State, st.Why = Blocked, ready.Message
	case isHR && (readyFalse && slices.Contains(HelmReleaseWaitReasons, ready.Reason) || failed == ClauseChartSourceReady):
		// Waiting on its chart source: progress while the source works,
		// a failure when the source failed or is missing.
		switch {
		case !src.Found:
			st.State, st.Why, st.Current = Failing, "its chart source "+src.Ref.String()+" does not exist", true
		case !src.Ready && src.Failed:
			st.State, st.Why, st.Current = Failing, "its chart source "+src.Ref.String()+" failed: "+src.Desc, true
		default:
			st.State, st.Why = Progressing, "waiting for its chart source "+src.Ref.String()+": "+src.Desc
		}
	case readyFalse && isHR:
		st.State = Failing
		st.Why = ready.Reason + ": " + ready.Message + remediation
		st.Current = atGen
	case readyFalse:
		// A known failure reason, or one this tool does not know: both
		// fail closed (an unknown reason is not progress).
		st.State = Failing
		st.Why = ready.Reason + ": " + ready.Message
		if !slices.Contains(kustomizeFailingReasons, ready.Reason) {
			st.Why = "Ready=False " + st.Why
		}
		st.Current = atGen && src.Revision != "" && st.Attempted == src.Revision
	case ready == nil:
		st.State, st.Why = Progressing, "not reconciled yet (no Ready condition)"
	case conditions.IsReconciling(o) || ready.Status == metav1.ConditionUnknown:
		st.State, st.Why = Progressing, "reconciling: "+ready.Message
	case failed == ClauseObservedGeneration && atGen:
		// Ready already speaks of this generation: the controller is
		// finishing its status update (kustomize-controller passes through
		// status.observedGeneration -1 on its way to success).
		st.State = Progressing
		st.Why = fmt.Sprintf("finishing: Ready at generation %d, status.observedGeneration still %d", st.Generation, st.ObservedGeneration)
	default:
		st.State = Stale
		switch {
		case failed == ClauseSourceReady:
			st.Why = "Ready, but its source " + src.Ref.String() + " is not: " + src.Desc
		case failed == ClauseAppliedRevision:
			st.Why = fmt.Sprintf("Ready at %s, its source is at %s", orNone(st.Applied), src.Revision)
		case failed == ClauseReleasedChart:
			st.Why = fmt.Sprintf("Ready with release %s, its source serves %s", orNone(st.Applied), src.Revision)
		case isHR:
			st.Why = fmt.Sprintf("Ready, but not %s (generation %d, observed %d)", failed, st.Generation, st.ObservedGeneration)
		default:
			st.Why = fmt.Sprintf("Ready, but not %s (generation %d, observed %d, Ready observed %d)", failed, st.Generation, st.ObservedGeneration, ready.ObservedGeneration)
		}
	}
	return st
}

// HelmReleaseRemediation is helm-controller's failure counters
// (status.installFailures, upgradeFailures, failures) as a suffix for
// messages, "" when all are zero.
func HelmReleaseRemediation(hr *helmv2.HelmRelease) string {
	s := hr.Status
	if s.InstallFailures == 0 && s.UpgradeFailures == 0 && s.Failures == 0 {
		return ""
	}
	return fmt.Sprintf(" (install failures %d, upgrade failures %d, failures %d)", s.InstallFailures, s.UpgradeFailures, s.Failures)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
