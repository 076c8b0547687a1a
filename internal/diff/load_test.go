package diff

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// fluxrepo.SetsOpenAPI decides whether the two revisions may load concurrently.
func TestDiffSetsOpenAPI(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  bool
	}{
		{"none", map[string]string{"apps/kustomization.yaml": "resources: [a.yaml]\n", "apps/a.yaml": "openapi: {path: x}\n"}, false},
		{"kustomization.yaml", map[string]string{"apps/kustomization.yaml": "resources: [a.yaml]\nopenapi:\n  path: schema.json\n"}, true},
		{"Kustomization", map[string]string{"deep/er/Kustomization": "openapi: {version: v1.21.2}\n"}, true},
		{"kustomization.yml", map[string]string{"k/kustomization.yml": "openapi: {path: s.json}\n"}, true},
		{"under .git", map[string]string{".git/kustomization.yaml": "openapi: {path: s.json}\n"}, false},
		// fluxrepo then builds with the upstream build, which swaps the
		// process-global schema: the revisions must not load at once.
		{"not YAML", map[string]string{"k/kustomization.yaml": "openapi: [\n"}, true},
		{"not YAML, no openapi", map[string]string{"k/kustomization.yaml": "resources: [\n"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			for p, s := range c.files {
				p = filepath.Join(dir, p)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := fluxrepo.SetsOpenAPI(dir); got != c.want {
				t.Errorf("SetsOpenAPI = %t, want %t", got, c.want)
			}
		})
	}
}

// sameInputs reuses a render only when nothing it reads changed: a file of
// one app changes that app alone; a knob every app reads changes them all;
// the substitution mode changes every one.
func TestDiffSameInputs(t *testing.T) {
	const apps = 6
	gen := func(edit func(dir string)) *side {
		dir := t.TempDir()
		genHomelab(t, dir, apps, 3)
		if edit != nil {
			edit(dir)
		}
		s, err := load(context.Background(), Options{}, fluxrepo.Options{KeepGoing: true, Holes: true}, dir, "clusters/bench", false, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	replace := func(file, old, new string) func(string) {
		return func(dir string) {
			p := filepath.Join(dir, file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), old) {
				t.Fatalf("%s lacks %q", file, old)
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	base := gen(nil)
	all := apps + 2 // the apps, flux-system, cluster-apps
	for _, c := range []struct {
		name      string
		head      *side
		strict    bool
		different []string
	}{
		{"unchanged", gen(nil), false, nil},
		{"one file", gen(replace("apps/ns-00/app-004/app/deployment.yaml", ":1.0.0", ":1.0.1")), false, []string{"flux-system/app-004"}},
		{"a knob every app reads", gen(replace("clusters/bench/vars.yaml", "Etc/UTC", "Europe/Paris")), false,
			[]string{"flux-system/app-000", "flux-system/app-001", "flux-system/app-002", "flux-system/app-003", "flux-system/app-004", "flux-system/app-005", "flux-system/flux-system"}},
		{"the Kustomization's own spec", gen(replace("apps/ns-00/app-002/ks.yaml", "interval: 1h", "interval: 2h")), false, []string{"flux-system/app-002", "flux-system/cluster-apps"}},
		{"the substitution mode", gen(nil), true, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := *c.head
			h.sub.strict = base.sub.strict != c.strict
			same := sameInputs(base, &h)
			var different []string
			for ref := range h.kustomizations() {
				if !same[ref] {
					different = append(different, ref)
				}
			}
			slices.Sort(different)
			want := c.different
			if c.strict {
				want = nil
				for ref := range h.kustomizations() {
					want = append(want, ref)
				}
				slices.Sort(want)
			}
			if len(h.kustomizations()) != all || !slices.Equal(different, want) {
				t.Errorf("%d Kustomizations; not reused: %v, want %v", len(h.kustomizations()), different, want)
			}
		})
	}
}
