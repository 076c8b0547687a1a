package flow

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// pinned is testdata/releases/up-pinned: flux bootstrap's layout whose
// gotk-components.yaml header declares Flux v2.7.5, with the strict
// overlay in flux-system/kustomization.yaml.
var pinned = rootsync.Options{Repo: "../../testdata/releases/up-pinned", Path: "clusters/dev", Namespace: "flux-system", RootName: "flux-system"}

// withHeader is pinned with the header declaring version instead.
func withHeader(t *testing.T, version string) rootsync.Options {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(pinned.Repo)); err != nil {
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
	o := pinned
	o.Repo = dir
	return o
}

// TestOneRelease (issue 46 item 1): up resolves the release the repository
// declares as check does (fluxrelease.ForEnv) and installs it — the render
// and the controllers' minimum Kubernetes are that release's — and the
// static phase judges by the same one; an explicit --flux-version wins and
// says what it overrides; a repository declaring none gets the default. A
// declared release this build does not embed (a patch release of an
// embedded minor, a release older than all) is refused before the first
// request, naming the embedded releases and the fix; with --manifests it
// is not (the directory's release is rendered).
func TestOneRelease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     rootsync.Options
		choice  Choice
		manif   bool
		version string // the render's release
		line    string
		refused []string
	}{
		{name: "declared", env: pinned, version: "v2.7.5",
			line: "Flux v2.7.5, declared by flux bootstrap's gotk-components.yaml header at clusters/dev/flux-system/gotk-components.yaml:3"},
		// Issue 46's case: the repository's own flux-manifests source.
		{name: "flux-manifests OCIRepository", env: rootsync.Options{Repo: "../../testdata/releases/oci-manifests", Path: "clusters/dev", Namespace: "flux-system", RootName: "flux-system"}, version: "v2.3.0",
			line: "Flux v2.3.0, declared by OCIRepository oci://ghcr.io/fluxcd/flux-manifests ref.tag at clusters/dev/flux.yaml:10"},
		{name: "none declared", env: homelab, version: "v2.9.5", line: "Flux v2.9.5 (the default: the repository declares no release)"},
		{name: "explicit wins", env: pinned, choice: Choice{FluxVersion: "v2.9.5", From: "--flux-version"}, version: "v2.9.5",
			line: `Flux v2.9.5 (--flux-version): --flux-version overrides flux bootstrap's gotk-components.yaml header "v2.7.5" at clusters/dev/flux-system/gotk-components.yaml:3`},
		{name: "explicit from a versions file", env: pinned, choice: Choice{FluxVersion: "v2.6.4", From: "FLUX_VERSION in versions.env"}, version: "v2.6.4",
			line: "Flux v2.6.4 (FLUX_VERSION in versions.env)"},
		{name: "patch release not embedded", env: withHeader(t, "v2.7.9"),
			refused: []string{"Flux v2.7.9, declared by flux bootstrap's gotk-components.yaml header at clusters/dev/flux-system/gotk-components.yaml:3, is not embedded", "v2.2.3, ", "v2.9.5", "pass --flux-version", "--manifests"}},
		{name: "older than every embedded release", env: withHeader(t, "v0.41.2"),
			refused: []string{"Flux v0.41.2, declared by flux bootstrap's gotk-components.yaml header", "older than every release embedded", "pass --flux-version"}},
		{name: "not embedded, with --manifests", env: withHeader(t, "v2.7.9"), manif: true, version: "v2.9.5",
			line: "Flux v2.7.5, declared by flux bootstrap's gotk-components.yaml header \"v2.7.9\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			co := ctrlOptions()
			if tc.manif {
				co.Render.Manifests = "/nonexistent/manifests" // read when the render runs
			}
			r := verify.NewReport("up")
			p, err := Assemble(context.Background(), Options{Env: tc.env, Static: &Static{}, Controllers: co, Sync: &Sync{}, Release: tc.choice, Cluster: noCluster(t)}, r)
			if len(tc.refused) > 0 {
				if !verify.IsInput(err) {
					t.Fatalf("err = %v, want an input error", err)
				}
				for _, want := range tc.refused {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the refusal does not say %q:\n%v", want, err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.Release == nil || !strings.HasPrefix(p.Release.Line(), tc.line) || !strings.HasPrefix(r.Facts[ReleaseFact], strings.SplitN(tc.line, ":", 2)[0]) {
				t.Errorf("release line %q (fact %q), want %q", p.Release.Line(), r.Facts[ReleaseFact], tc.line)
			}
			var static *check.Phase
			for _, ph := range p.Phases {
				if s, ok := ph.(*check.Phase); ok {
					static = s
				}
			}
			if static == nil {
				t.Fatal("no static phase")
			}
			// The static phase resolves as the run did, or takes the choice.
			if static.Options.FluxVersion != tc.choice.FluxVersion || static.Options.FluxVersionFrom != tc.choice.From {
				t.Errorf("static judges by %q (%q), want %q", static.Options.FluxVersion, static.Options.FluxVersionFrom, tc.choice.FluxVersion)
			}
			// The controllers phase renders that release.
			b, err := rootsync.Build(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			co = ctrlOptions()
			if tc.manif {
				co.Render.Manifests = "/nonexistent/manifests"
			}
			if _, err := InstallRelease(b.Env, co, tc.choice); err != nil || co.Render.Components.FluxVersion != tc.version || (co.MinKubernetes == "") != tc.manif {
				t.Errorf("the render is Flux %q (min Kubernetes %q, %v), want %s", co.Render.Components.FluxVersion, co.MinKubernetes, err, tc.version)
			}
		})
	}
}

// TestJudgeRelease: status over an environment compares the controllers
// with the render of the release the repository declares, as check judges
// it: a release not embedded by the nearest embedded one, with a warning
// (status installs nothing, so it is not refused); an explicit choice wins.
func TestJudgeRelease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     rootsync.Options
		choice  Choice
		version string
		warn    string
	}{
		{"declared", pinned, Choice{}, "v2.7.5", ""},
		{"explicit", pinned, Choice{FluxVersion: "v2.9.5", From: "--flux-version"}, "v2.9.5", ""},
		{"not embedded", withHeader(t, "v2.7.9"), Choice{}, "v2.7.5", "the controllers are compared with the render of Flux v2.7.5"},
		{"older than all", withHeader(t, "v0.41.2"), Choice{}, "v2.9.5", "the controllers are compared with the render of Flux v2.9.5, the default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := rootsync.Build(tc.env)
			if err != nil {
				t.Fatal(err)
			}
			ro := ctrlOptions().Render
			_, warn, err := JudgeRelease(b.Env, &ro, tc.choice)
			if err != nil || ro.Components.FluxVersion != tc.version || !strings.Contains(warn, tc.warn) || (tc.warn == "") != (warn == "") {
				t.Errorf("render Flux %s, warning %q (%v); want %s, %q", ro.Components.FluxVersion, warn, err, tc.version, tc.warn)
			}
		})
	}
}
