package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEnvironment(t *testing.T) {
	t.Parallel()
	pinned := filepath.Join(t.TempDir(), "versions.env")
	if err := os.WriteFile(pinned, []byte("# the homelab's own pins\nFLUX_VERSION=2.4.0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noVersion := filepath.Join(t.TempDir(), "versions.env")
	if err := os.WriteFile(noVersion, []byte("KUBERNETES_VERSION=v1.36.4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		version string // the rendered Flux version
		want    string // in the report's facts, warnings or stderr
	}{
		{"script's FLUX_VERSION without v", map[string]string{"FLUX_VERSION": "2.4.0"}, nil, 0, "v2.4.0", "FLUX_VERSION (the bootstrap script's variable)"},
		{"BOOTSTRAP_ wins over the alias", map[string]string{"FLUX_VERSION": "2.4.0", "BOOTSTRAP_FLUX_VERSION": "v2.9.5"}, nil, 0, "v2.9.5", "BOOTSTRAP_FLUX_VERSION"},
		{"the flag wins over both", map[string]string{"FLUX_VERSION": "2.4.0", "BOOTSTRAP_FLUX_VERSION": "v2.4.0"}, []string{"--flux-version", "v2.9.5"}, 0, "v2.9.5", ""},
		{"--versions-file", nil, []string{"--versions-file", pinned}, 0, "v2.4.0", "FLUX_VERSION in " + pinned},
		{"--versions-file without FLUX_VERSION", nil, []string{"--versions-file", noVersion}, 2, "", "has no FLUX_VERSION"},
		{"FLUX_INSTALL_PLAIN=1 is --plain, loudly", map[string]string{"FLUX_INSTALL_PLAIN": "1"}, nil, 0, "v2.9.5", "--plain: controller overlays skipped on purpose"},
		{"FLUX_COMPONENTS_EXTRA", map[string]string{"FLUX_COMPONENTS_EXTRA": "image-reflector-controller,image-automation-controller"}, nil, 0, "v2.9.5", "image-automation-controller"},
		{"a bad value names its variable", map[string]string{"BOOTSTRAP_FLUX_VERSION": "v9.9.9"}, nil, 2, "", "v9.9.9"},
		{"a bad value for a typed flag", map[string]string{"BOOTSTRAP_NETWORK_POLICY": "maybe"}, nil, 2, "", "BOOTSTRAP_NETWORK_POLICY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"render", "-o", "json", "--output-dir", out}, tt.args...)
			r := cli(t, "", tt.env, args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", r.code, tt.code, r.stdout, r.stderr)
			}
			if tt.want != "" && !strings.Contains(r.stdout+r.stderr, tt.want) {
				t.Errorf("output should say %q:\n%s\n%s", tt.want, r.stdout, r.stderr)
			}
			if tt.version == "" {
				return
			}
			var doc struct{ Facts map[string]string }
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Facts["fluxVersion"] != tt.version {
				t.Errorf("rendered %s, want %s", doc.Facts["fluxVersion"], tt.version)
			}
		})
	}
}

// TestCheckNamesTheVersionOrigin: a release not embedded, given by the
// script's FLUX_VERSION, is refused naming that variable, not a
// --flux-version never given (review item 10).
func TestCheckNamesTheVersionOrigin(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"FLUX_VERSION", map[string]string{"FLUX_VERSION": "2.4.1"}, nil, "Flux v2.4.1 (from FLUX_VERSION (the bootstrap script's variable)): not embedded"},
		{"--flux-version", nil, []string{"--flux-version", "v2.4.1"}, "Flux v2.4.1 (from --flux-version): not embedded"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"check", "--repo", "../../testdata/check/clean", "--path", "clusters/dev"}, tt.args...)
			r := cli(t, "", tt.env, args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Fatalf("exit %d, want 2 and %q:\n%s\n%s", r.code, tt.want, r.stdout, r.stderr)
			}
		})
	}
}
