package converge

import (
	"fmt"
	"slices"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

// helmClause is one clause of a HelmRelease's converged predicate.
type helmClause struct {
	name  string
	holds func(hr *helmv2.HelmRelease, src Source) bool
}

// helmClauses is a HelmRelease's converged predicate (helm-controller
// v1.6.4): not suspended; the model's generic clauses (observed its
// generation, Ready=True at it, not Reconciling, not Stalled); its chart
// source Ready with an artifact; and its newest Helm release made from
// that artifact (fluxobj.HelmReleaseAtRevision: the release's OCI digest,
// or its chart version for a HelmChart). TestHelmReleaseClauses proves
// each one load-bearing.
var helmClauses = func() []helmClause {
	cs := []helmClause{{"not suspended", func(hr *helmv2.HelmRelease, _ Source) bool { return !hr.Spec.Suspend }}}
	for _, c := range fluxobj.ReadyClauses {
		cs = append(cs, helmClause{c.Name, func(hr *helmv2.HelmRelease, _ Source) bool { return c.Holds(hr) }})
	}
	return append(cs,
		helmClause{"chart source Ready with an artifact", func(_ *helmv2.HelmRelease, s Source) bool {
			return s.Found && s.Ready && s.Revision != ""
		}},
		helmClause{"released its source's chart", func(hr *helmv2.HelmRelease, s Source) bool {
			return fluxobj.HelmReleaseAtRevision(hr, s.Ref.Kind, s.Revision)
		}},
	)
}()

// IsHelmReleaseConverged is the HelmRelease's converged predicate.
func IsHelmReleaseConverged(hr *helmv2.HelmRelease, src Source) bool {
	ok, _ := holdsHelm(helmClauses, hr, src)
	return ok
}

func holdsHelm(cs []helmClause, hr *helmv2.HelmRelease, src Source) (bool, string) {
	if hr == nil {
		return false, "exists"
	}
	for _, c := range cs {
		if !c.holds(hr, src) {
			return false, c.name
		}
	}
	return true, ""
}

// ClassifyHelmRelease says what a HelmRelease is doing, in the states a
// Kustomization has: Ready=False DependencyNotReady is Blocked (helm-
// controller requeues it after --requeue-dependency, nothing watches the
// dependency); a chart source that is not ready is a wait while the source
// is still working, and a failure (counted against --fail-after) when the
// source itself failed or does not exist; Stalled (remediation retries
// exhausted, an invalid CEL expression, access denied) and suspended are
// Terminal; any other Ready=False is Failing, with helm-controller's
// remediation counters in the reason.
func ClassifyHelmRelease(hr *helmv2.HelmRelease, src Source) Status {
	return classifyHelm(helmClauses, hr, src)
}

func classifyHelm(cs []helmClause, hr *helmv2.HelmRelease, src Source) Status {
	st := Status{Want: src.Revision}
	if hr == nil {
		st.State, st.Why = Pending, "not created yet"
		return st
	}
	if latest := hr.Status.History.Latest(); latest != nil {
		st.Applied = latest.ChartVersion
		if latest.OCIDigest != "" {
			st.Applied += "@" + latest.OCIDigest
		}
	}
	st.Attempted = hr.Status.LastAttemptedRevision
	st.Generation, st.ObservedGeneration = hr.Generation, hr.Status.ObservedGeneration
	st.Handled = hr.Status.LastHandledReconcileAt
	ready := conditions.Get(hr, meta.ReadyCondition)
	if ready != nil {
		st.Reason, st.Message = ready.Reason, ready.Message
	}
	ok, failed := holdsHelm(cs, hr, src)
	if ok {
		st.State, st.Why = Converged, "released "+orNone(st.Applied)+" from "+src.Revision
		return st
	}
	atGen := ready != nil && ready.ObservedGeneration == hr.Generation
	switch {
	case hr.Spec.Suspend:
		st.State, st.Why = Terminal, "suspended (spec.suspend: true): resume it or remove it from the environment"
	case conditions.IsStalled(hr):
		st.State = Terminal
		st.Why = fmt.Sprintf("stalled: %s: %s%s", conditions.GetReason(hr, meta.StalledCondition), conditions.GetMessage(hr, meta.StalledCondition), remediation(hr))
	case ready != nil && ready.Status == metav1.ConditionFalse && ready.Reason == helmv2.DependencyNotReadyReason:
		st.State, st.Why = Blocked, ready.Message
	case ready != nil && ready.Status == metav1.ConditionFalse && slices.Contains(fluxobj.HelmReleaseWaitReasons, ready.Reason) || failed == "chart source Ready with an artifact":
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
	case ready != nil && ready.Status == metav1.ConditionFalse:
		st.State = Failing
		st.Why = ready.Reason + ": " + ready.Message + remediation(hr)
		st.Current = atGen
	case ready == nil:
		st.State, st.Why = Progressing, "not reconciled yet (no Ready condition)"
	case conditions.IsReconciling(hr) || ready.Status == metav1.ConditionUnknown:
		st.State, st.Why = Progressing, "reconciling: "+ready.Message
	case failed == "observed its generation" && atGen:
		st.State = Progressing
		st.Why = fmt.Sprintf("finishing: Ready at generation %d, status.observedGeneration still %d", hr.Generation, hr.Status.ObservedGeneration)
	default:
		st.State = Stale
		switch failed {
		case "released its source's chart":
			st.Why = fmt.Sprintf("Ready with release %s, its source serves %s", orNone(st.Applied), src.Revision)
		default:
			st.Why = fmt.Sprintf("Ready, but not %s (generation %d, observed %d)", failed, hr.Generation, hr.Status.ObservedGeneration)
		}
	}
	return st
}

// remediation is helm-controller's failure counters, when any.
func remediation(hr *helmv2.HelmRelease) string {
	s := hr.Status
	if s.InstallFailures == 0 && s.UpgradeFailures == 0 && s.Failures == 0 {
		return ""
	}
	return fmt.Sprintf(" (install failures %d, upgrade failures %d, failures %d)", s.InstallFailures, s.UpgradeFailures, s.Failures)
}

// HelmReleaseEvidence describes a HelmRelease's live state: generations,
// conditions, its newest releases and its chart source.
func HelmReleaseEvidence(hr *helmv2.HelmRelease, src Source) []string {
	if hr == nil {
		return []string{"HelmRelease not found", "chart source " + src.Ref.String() + ": " + src.Desc}
	}
	out := []string{fmt.Sprintf("generation %d, status.observedGeneration %d", hr.Generation, hr.Status.ObservedGeneration)}
	for _, t := range []string{meta.ReadyCondition, meta.ReconcilingCondition, meta.StalledCondition, helmv2.ReleasedCondition, helmv2.RemediatedCondition, helmv2.TestSuccessCondition} {
		if c := conditions.Get(hr, t); c != nil {
			out = append(out, fmt.Sprintf("%s=%s %s (observedGeneration %d): %s", t, c.Status, c.Reason, c.ObservedGeneration, c.Message))
		}
	}
	for i, snap := range hr.Status.History {
		if i == 2 {
			break
		}
		out = append(out, fmt.Sprintf("release %s v%d: chart %s %s%s, %s", snap.Name, snap.Version, snap.ChartName, snap.ChartVersion, digestSuffix(snap.OCIDigest), snap.Status))
	}
	if len(hr.Status.History) == 0 {
		out = append(out, "no Helm release yet")
	}
	out = append(out, fmt.Sprintf("lastAttemptedRevision %s%s, source at %s", orNone(hr.Status.LastAttemptedRevision), remediation(hr), orNone(src.Revision)))
	out = append(out, "chart source "+src.Ref.String()+": "+src.Desc)
	if hr.Spec.Suspend {
		out = append(out, "spec.suspend: true")
	}
	return out
}

func digestSuffix(d string) string {
	if d == "" {
		return ""
	}
	return "@" + d
}
