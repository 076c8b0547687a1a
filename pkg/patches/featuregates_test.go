package patches

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestFeatureGates: a --feature-gates name the controller version does not
// support fails the render, because the controller exits at start-up
// (fluxcd/pkg/runtime v0.110.3 features.SupportedFeatures: "feature-gate
// '%s' not supported"; kustomize-controller v1.9.5 main.go: os.Exit(1)).
func TestFeatureGates(t *testing.T) {
	t.Parallel()
	const kc, hc = "ghcr.io/fluxcd/kustomize-controller:v1.9.5", "ghcr.io/fluxcd/helm-controller:v1.6.4"
	for _, tc := range []struct {
		name string
		deps []appsv1.Deployment
		want verify.Verdict
		msg  string
	}{
		{"no gate set", []appsv1.Deployment{dep("kustomize-controller", kc, "--watch-all-namespaces=true")}, verify.Pass, "no --feature-gates set"},
		{"supported gates", []appsv1.Deployment{
			dep("kustomize-controller", kc, "--feature-gates=StrictPostBuildSubstitutions=true,CancelHealthCheckOnNewRevision=true"),
			dep("helm-controller", hc, "--feature-gates=AdditiveCELDependencyCheck=true")}, verify.Pass, "3 feature gate setting(s)"},
		{"a misspelt gate", []appsv1.Deployment{dep("kustomize-controller", kc, "--feature-gates=StrictPostBuildSubstitution=true")}, verify.Fail,
			`kustomize-controller v1.9.5 does not support feature gate "StrictPostBuildSubstitution" and exits at start-up ("feature-gate 'StrictPostBuildSubstitution' not supported") (did you mean StrictPostBuildSubstitutions?)`},
		{"another controller's gate", []appsv1.Deployment{dep("kustomize-controller", kc, "--feature-gates=DetectDrift=true")}, verify.Fail,
			`does not support feature gate "DetectDrift"`},
		{"a gate the version does not have yet", []appsv1.Deployment{dep("kustomize-controller", "fluxcd/kustomize-controller:v1.6.0", "--feature-gates=ExternalArtifact=true")}, verify.Fail,
			`kustomize-controller v1.6.0 does not support feature gate "ExternalArtifact"`},
		{"a value the flag refuses", []appsv1.Deployment{dep("helm-controller", hc, "--feature-gates=DetectDrift")}, verify.Fail,
			`Deployment/flux-system/helm-controller container manager: arg "--feature-gates=DetectDrift"`},
		// kustomize-controller v1.4.0 (Flux v2.4.0) is recorded, read at its
		// git tag: internal/features/features.go has the gate, opt-in.
		{"the seed's release", []appsv1.Deployment{dep("kustomize-controller", "fluxcd/kustomize-controller:v1.4.0", "--feature-gates=StrictPostBuildSubstitutions=true")}, verify.Pass,
			"kustomize-controller v1.4.0: StrictPostBuildSubstitutions=true (default false)"},
		// kustomize-controller v1.2.2 internal/features/features.go has no
		// StrictPostBuildSubstitutions (its comment: opt-in from v1.3).
		{"a gate older than the version", []appsv1.Deployment{dep("kustomize-controller", "fluxcd/kustomize-controller:v1.2.2", "--feature-gates=StrictPostBuildSubstitutions=true")}, verify.Fail,
			`kustomize-controller v1.2.2 does not support feature gate "StrictPostBuildSubstitutions"`},
		// source-watcher v2.0.1 cmd/main.go binds --feature-gates and never
		// calls SupportedFeatures: it refuses no name.
		{"a version that takes any name", []appsv1.Deployment{dep("source-watcher", "fluxcd/source-watcher:v2.0.1", "--feature-gates=Anything=true")}, verify.Pass,
			"source-watcher v2.0.1: Anything=true (this version accepts any gate name and reads none)"},
		// No bundle deploys kustomize-controller v1.1.0 (Flux v2.1).
		{"a version not recorded", []appsv1.Deployment{dep("kustomize-controller", "fluxcd/kustomize-controller:v1.1.0", "--feature-gates=StrictPostBuildSubstitutions=true")}, verify.Skip,
			"kustomize-controller v1.1.0 (StrictPostBuildSubstitutions) are not recorded"},
		{"an untagged image", []appsv1.Deployment{dep("kustomize-controller", "registry.lan/kc@sha256:"+strings.Repeat("a", 64), "--feature-gates=StrictPostBuildSubstitutions=true")}, verify.Skip,
			"kustomize-controller (none)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := featureGates(tc.deps)
			got := c.Message + "\n" + strings.Join(c.Evidence, "\n")
			if c.Verdict != tc.want || !strings.Contains(got, tc.msg) {
				t.Fatalf("%s: %s\nwant %s containing %q", c.Verdict, got, tc.want, tc.msg)
			}
		})
	}
}
