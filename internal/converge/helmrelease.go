package converge

import (
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

// helmClauses is a HelmRelease's converged predicate, the model's
// (fluxobj.HelmReleaseRules, helm-controller v1.6.4). TestHelmReleaseClauses
// proves each one load-bearing.
var helmClauses = fluxobj.HelmReleaseRules

// IsHelmReleaseConverged is the HelmRelease's converged predicate.
func IsHelmReleaseConverged(hr *helmv2.HelmRelease, src Source) bool {
	return ClassifyHelmRelease(hr, src).State == Converged
}

// ClassifyHelmRelease says what a HelmRelease is doing
// (fluxobj.ClassifyHelmRelease), in the states a Kustomization has.
func ClassifyHelmRelease(hr *helmv2.HelmRelease, src Source) Status {
	return fluxobj.ClassifyHelmRelease(hr, src)
}

// remediation is helm-controller's failure counters, when any.
func remediation(hr *helmv2.HelmRelease) string { return fluxobj.HelmReleaseRemediation(hr) }

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
