package patches

import "testing"

func TestEffectiveGate(t *testing.T) {
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
			f, err := ParseArgs(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			g := EffectiveGate("kustomize-controller", tt.version, f, StrictSubstitution)
			if g.Value != tt.want || g.Explicit != tt.explicit {
				t.Errorf("got value=%t explicit=%t, want %t %t", g.Value, g.Explicit, tt.want, tt.explicit)
			}
		})
	}
}

func TestParseArgsRejectsBadGate(t *testing.T) {
	if _, err := ParseArgs([]string{"--feature-gates=StrictPostBuildSubstitutions=maybe"}); err == nil {
		t.Fatal("a non-boolean gate value must be an error")
	}
}

func TestParseArgsValues(t *testing.T) {
	f, err := ParseArgs([]string{"--log-level=info", "--watch-all-namespaces", "--log-level=debug", "--storage-path", "/data"})
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
	for image, want := range map[string]string{
		"ghcr.io/fluxcd/kustomize-controller:v1.9.5":                                                                       "v1.9.5",
		"fluxcd/kustomize-controller:v1.4.0":                                                                               "v1.4.0",
		"registry.local:5000/fluxcd/kustomize-controller:v1.4.0":                                                           "v1.4.0",
		"registry.local:5000/fluxcd/kustomize-controller":                                                                  "",
		"ghcr.io/fluxcd/kustomize-controller@sha256:" + "0123456789012345678901234567890123456789012345678901234567890123": "",
	} {
		if got := ImageVersion(image); got != want {
			t.Errorf("ImageVersion(%s) = %q, want %q", image, got, want)
		}
	}
}
