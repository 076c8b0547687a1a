package fluxobj

import (
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHelmReleaseRevisionDigest: the digest helm-controller records for a
// chart source's revision. Read in fluxcd/helm-controller
// internal/controller/helmrelease_controller.go (v1.6.3; v1.6.4, the version
// flux2 v2.9.5 pins, is its patch release): isSourceWithRevisionDigest (an
// OCIRepository always, an ExternalArtifact when its revision holds ':'),
// mutateChartWithSourceRevision (a "<semver tag>@<digest>" revision gives
// the part after '@', any other the whole revision) and parseSemverFromTag
// ('_' read as '+'); the result is status.lastAttemptedRevisionDigest.
func TestHelmReleaseRevisionDigest(t *testing.T) {
	const d = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		kind, revision, want string
	}{
		{OCIRepositoryKind, "1.16.3@" + d, d},
		{OCIRepositoryKind, "1.16.3_build.1@" + d, d},     // '_' is the OCI tag's '+'
		{OCIRepositoryKind, "latest@" + d, "latest@" + d}, // not a semver tag: the whole revision
		{OCIRepositoryKind, d, d},                         // a digest-only revision
		{ExternalArtifactKind, "1.0.0@" + d, d},
		{ExternalArtifactKind, "1.0.0", ""}, // no ':': helm-controller records no digest
		{HelmChartKind, "1.16.3", ""},       // a HelmChart's revision is the chart version
	} {
		if got := HelmReleaseRevisionDigest(tc.kind, tc.revision); got != tc.want {
			t.Errorf("HelmReleaseRevisionDigest(%s, %q) = %q, want %q", tc.kind, tc.revision, got, tc.want)
		}
	}
}

// TestHelmReleaseAtRevision: the newest release (status.history sorted by
// version, helmv2.Snapshots.Latest) is the chart the source serves now: its
// ociDigest (copied from status.lastAttemptedRevisionDigest,
// internal/reconcile/release.go observeRelease) against a digest source, its
// chartVersion (the loaded chart's version, helmrelease_controller.go) against
// a HelmChart. Each case that should not hold breaks one part.
func TestHelmReleaseAtRevision(t *testing.T) {
	const d1 = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	const d2 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	hr := func(snaps ...*helmv2.Snapshot) *helmv2.HelmRelease {
		h := &helmv2.HelmRelease{}
		h.Status.History = snaps
		return h
	}
	oci := func(version int, dgst string) *helmv2.Snapshot {
		return &helmv2.Snapshot{Version: version, ChartVersion: "1.16.3+" + dgst[7:19], OCIDigest: dgst}
	}
	for _, tc := range []struct {
		name           string
		hr             *helmv2.HelmRelease
		kind, revision string
		want           bool
	}{
		{"OCI chart at the served digest", hr(oci(2, d1)), OCIRepositoryKind, "1.16.3@" + d1, true},
		{"OCI chart, a newer digest served", hr(oci(2, d1)), OCIRepositoryKind, "1.16.3@" + d2, false},
		{"the newest release counts, not the first listed", hr(oci(1, d2), oci(2, d1)), OCIRepositoryKind, "1.16.3@" + d2, false},
		{"no release yet", hr(), OCIRepositoryKind, "1.16.3@" + d1, false},
		{"no artifact", hr(oci(1, d1)), OCIRepositoryKind, "", false},
		{"HelmChart at its version", hr(&helmv2.Snapshot{Version: 1, ChartVersion: "0.4.0"}), HelmChartKind, "0.4.0", true},
		{"HelmChart, another version served", hr(&helmv2.Snapshot{Version: 1, ChartVersion: "0.4.0"}), HelmChartKind, "0.5.0", false},
	} {
		if got := HelmReleaseAtRevision(tc.hr, tc.kind, tc.revision); got != tc.want {
			t.Errorf("%s: HelmReleaseAtRevision = %t, want %t", tc.name, got, tc.want)
		}
	}
}

// TestHelmReleaseNewIsNotReady: the HelmRelease CRD defaults status to
// {observedGeneration: -1} (the v2 schema's status default in Flux
// v2.9.5's helm-controller.yaml, internal/components/bundles), so a
// HelmRelease not yet reconciled fails "observed its generation" even
// with a stale Ready=True.
func TestHelmReleaseNewIsNotReady(t *testing.T) {
	h := &helmv2.HelmRelease{}
	h.Generation = 1
	h.Status.ObservedGeneration = -1
	h.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionTrue, ObservedGeneration: 1}}
	if ok, desc := Ready(h); ok || !strings.Contains(desc, "not observed its generation") {
		t.Fatalf("Ready = %t (%s), want not Ready: not observed its generation", ok, desc)
	}
	h.Status.ObservedGeneration = 1
	if ok, desc := Ready(h); !ok {
		t.Fatalf("reconciled: Ready = false (%s)", desc)
	}
}
