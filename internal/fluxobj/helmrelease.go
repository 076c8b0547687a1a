package fluxobj

import (
	"strings"

	"github.com/Masterminds/semver/v3"
	helmv2 "github.com/fluxcd/helm-controller/api/v2"
)

// HelmReleaseRevisionDigest is the digest helm-controller records for its
// chart source's artifact revision (status.lastAttemptedRevisionDigest,
// copied to the release's status.history entry as ociDigest), or "" for a
// source whose revision carries none (a HelmChart: its revision is the
// chart version). helm-controller's mutateChartWithSourceRevision and
// isSourceWithRevisionDigest: an OCIRepository always carries one; an
// ExternalArtifact when its revision holds a ':'; a "<semver tag>@<digest>"
// revision records the part after '@', any other revision records itself.
func HelmReleaseRevisionDigest(sourceKind, revision string) string {
	switch {
	case sourceKind == OCIRepositoryKind:
	case sourceKind == ExternalArtifactKind && strings.Contains(revision, ":"):
	default:
		return ""
	}
	if tag, dgst, found := strings.Cut(revision, "@"); found {
		// OCI tags spell a semver '+' as '_' (helm's registry client).
		if _, err := semver.NewVersion(strings.ReplaceAll(tag, "_", "+")); err == nil {
			return dgst
		}
	}
	return revision
}

// HelmReleaseAtRevision says the newest Helm release the HelmRelease
// records (status.history, newest first) was made from the chart artifact
// its source serves now (sourceKind, revision): for a source whose revision
// carries a digest, the release's ociDigest is that digest; for a HelmChart,
// the release's chart version is the artifact's revision. With the generic
// ReadyClauses it is "converged at revision" for a HelmRelease; the
// Kustomization's counterpart is AppliedRevision.
func HelmReleaseAtRevision(hr *helmv2.HelmRelease, sourceKind, revision string) bool {
	latest := hr.Status.History.Latest()
	if latest == nil || revision == "" {
		return false
	}
	if d := HelmReleaseRevisionDigest(sourceKind, revision); d != "" {
		return latest.OCIDigest == d
	}
	return latest.ChartVersion == revision
}
