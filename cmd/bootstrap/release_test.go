package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// pinnedAt copies testdata/releases/up-pinned (flux bootstrap's header
// declaring Flux v2.7.5) with the header declaring version instead.
func pinnedAt(t *testing.T, version string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../testdata/releases/up-pinned")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "clusters", "dev", "flux-system", "gotk-components.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "# Flux Version: v2.7.5", "# Flux Version: "+version, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReleaseNotEmbeddedRefused (issue 46 item 1): up and controllers
// --env install the release the repository declares; one this build does
// not embed is refused before the first request (exit 2: the kubeconfig
// names no reachable cluster, a request would exit 1), naming it, where it
// is declared, the embedded releases and the fix. --flux-version gets past
// the refusal, renders the release chosen and says what it overrides.
func TestReleaseNotEmbeddedRefused(t *testing.T) {
	t.Parallel()
	repo := pinnedAt(t, "v2.7.9")
	for _, args := range [][]string{
		{"up", "--repo", repo, "--env", "dev", "--dry-run"},
		{"up", "--repo", repo, "--env", "dev"},
		{"controllers", "--repo", repo, "--env", "dev", "--dry-run"},
	} {
		r := runCLI(t, args...)
		for _, want := range []string{"Flux v2.7.9, declared by flux bootstrap's gotk-components.yaml header at clusters/dev/flux-system/gotk-components.yaml:3, is not embedded", "v2.7.5", "pass --flux-version", "--manifests"} {
			if r.code != 2 || !strings.Contains(r.stderr, want) {
				t.Errorf("%v: exit %d, want 2 saying %q:\n%s", args, r.code, want, r.stderr)
			}
		}
	}
	r := runCLI(t, "controllers", "--repo", repo, "--env", "dev", "--dry-run", "--flux-version", "v2.7.5")
	if strings.Contains(r.stderr, "is not embedded") || !strings.Contains(r.stderr, "render.components: Flux v2.7.5") || !strings.Contains(r.stderr, `--flux-version overrides flux bootstrap's gotk-components.yaml header "v2.7.9"`) {
		t.Errorf("--flux-version v2.7.5 must get past the refusal: exit %d\n%s", r.code, r.stderr)
	}
}
