package fluxobj

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/homelab-ops/bootstrap/pkg/patches"
)

func TestEffectiveGate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		version  string
		args     []string
		want     bool
		explicit bool
	}{
		{"v1.4.0 default off", "v1.4.0", []string{"--log-level=info"}, false, false},
		{"v1.9.0 default on", "v1.9.0", nil, true, false},
		{"v1.9.5 default on", "v1.9.5", nil, true, false},
		{"explicit on, old version", "v1.4.0", []string{"--feature-gates=StrictPostBuildSubstitutions=true"}, true, true},
		{"later value wins", "v1.4.0", []string{"--feature-gates=StrictPostBuildSubstitutions=true", "--feature-gates=StrictPostBuildSubstitutions=false"}, false, true},
		{"repeated flags merge", "v1.4.0", []string{"--feature-gates=StrictPostBuildSubstitutions=true", "--feature-gates=OtherGate=true"}, true, true},
		{"comma list", "v1.9.5", []string{"--feature-gates=A=true,StrictPostBuildSubstitutions=false"}, false, true},
		{"space separated value", "v1.4.0", []string{"--feature-gates", "StrictPostBuildSubstitutions=true"}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := patches.ParseArgs(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			g := patches.EffectiveGate("kustomize-controller", tt.version, f, patches.StrictSubstitution)
			if g.Value != tt.want || g.Explicit != tt.explicit {
				t.Errorf("got value=%t explicit=%t, want %t %t", g.Value, g.Explicit, tt.want, tt.explicit)
			}
		})
	}
}

func TestParseArgsRejectsBadGate(t *testing.T) {
	t.Parallel()
	if _, err := patches.ParseArgs([]string{"--feature-gates=StrictPostBuildSubstitutions=maybe"}); err == nil {
		t.Fatal("a non-boolean gate value must be an error")
	}
}

func TestParseArgsValues(t *testing.T) {
	t.Parallel()
	f, err := patches.ParseArgs([]string{"--log-level=info", "--watch-all-namespaces", "--log-level=debug", "--storage-path", "/data"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"log-level": "debug", "watch-all-namespaces": "true", "storage-path": "/data"}
	for k, v := range want {
		if f.Values[k] != v {
			t.Errorf("%s=%q, want %q", k, f.Values[k], v)
		}
	}
}

func TestImageVersion(t *testing.T) {
	t.Parallel()
	for image, want := range map[string]string{
		"ghcr.io/fluxcd/kustomize-controller:v1.9.5":                                                                       "v1.9.5",
		"fluxcd/kustomize-controller:v1.4.0":                                                                               "v1.4.0",
		"registry.local:5000/fluxcd/kustomize-controller:v1.4.0":                                                           "v1.4.0",
		"registry.local:5000/fluxcd/kustomize-controller":                                                                  "",
		"ghcr.io/fluxcd/kustomize-controller@sha256:" + "0123456789012345678901234567890123456789012345678901234567890123": "",
	} {
		if got := patches.ImageVersion(image); got != want {
			t.Errorf("ImageVersion(%s) = %q, want %q", image, got, want)
		}
	}
}

// TestSOPSAgeSecret reads the flag as the controller binds it (a Go flag:
// `--name=value` or `--name value`, the last one wins), from the manager
// container.
func TestSOPSAgeSecret(t *testing.T) {
	t.Parallel()
	dep := func(cs ...corev1.Container) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Namespace, d.Name = "flux-system", "kustomize-controller"
		d.Spec.Template.Spec.Containers = cs
		return d
	}
	manager := func(args ...string) corev1.Container { return corev1.Container{Name: "manager", Args: args} }
	for _, tc := range []struct {
		name string
		dep  *appsv1.Deployment
		want string
	}{
		{"unset", dep(manager("--watch-all-namespaces=true", "--log-level=info")), ""},
		{"with =", dep(manager("--sops-age-secret=sops-age")), "sops-age"},
		{"as two args", dep(manager("--sops-age-secret", "age-keys", "--log-level=info")), "age-keys"},
		{"the last wins", dep(manager("--sops-age-secret=a", "--sops-age-secret=b")), "b"},
		{"from the manager, not a sidecar", dep(corev1.Container{Name: "sidecar", Args: []string{"--sops-age-secret=x"}}, manager()), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := SOPSAgeSecret(tc.dep)
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestEffectiveGateFromTheTable: where the generated table records the
// version, the default is the controller's own; a gate GateDefaults records
// for the controller, absent at that version, is off; any other gate it
// lacks is unknown
// (the sandbox runner must not pass kustomize-controller's gate to
// source-controller: that controller would exit).
func TestEffectiveGateFromTheTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		controller, version, gate string
		known, def                bool
	}{
		{"kustomize-controller", "v1.9.5", "DisableStatusPollerCache", true, true},
		{"kustomize-controller", "v1.9.5", "GroupChangeLog", true, false},
		{"kustomize-controller", "v1.6.0", patches.ExternalArtifact, true, false},
		{"kustomize-controller", "v1.6.0", patches.StrictSubstitution, true, false},
		{"helm-controller", "v1.4.0", "AdoptLegacyReleases", true, true},
		{"helm-controller", "v1.6.4", "AdoptLegacyReleases", true, false},
		{"source-controller", "v1.9.5", patches.StrictSubstitution, false, false},
	} {
		g := patches.EffectiveGate(tc.controller, tc.version, patches.Flags{}, tc.gate)
		if g.DefaultKnown != tc.known || g.Default != tc.def {
			t.Errorf("%s %s %s: known %t default %t, want %t %t", tc.controller, tc.version, tc.gate, g.DefaultKnown, g.Default, tc.known, tc.def)
		}
	}
}
