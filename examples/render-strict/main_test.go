package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderStrict runs the example program as CI does: the strict patch
// passes every proof (exit 0), a patch turning the gate off fails (exit 1),
// bad input is exit 2.
func TestRenderStrict(t *testing.T) {
	out := filepath.Join(t.TempDir(), "gotk-components.yaml")
	for _, tt := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"strict patch", []string{"-o", out}, 0, []string{
			"pass  controllers.strict-substitution: StrictPostBuildSubstitutions=true only because of the overlay: kustomize-controller v1.4.0 defaults it to false",
			"pass  overlay.patch-landed/1:",
			"pass  overlay.args-preserved:",
			"kustomize-controller v1.4.0: StrictPostBuildSubstitutions=true (explicit true, default false)",
		}},
		{"a patch turning it off", []string{"-overlays", filepath.Join("testdata", "loose")}, 1, []string{
			"fail  controllers.strict-substitution: StrictPostBuildSubstitutions=false: turned off by the overlay",
			"StrictPostBuildSubstitutions=false (explicit true, default false)",
		}},
		{"a release not embedded", []string{"-flux-version", "v2.1.0"}, 2, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
	data, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(data, []byte("--feature-gates=StrictPostBuildSubstitutions=true")) {
		t.Errorf("-o %s: %v, or the render lacks the gate", out, err)
	}
}
