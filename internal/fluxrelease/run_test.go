package fluxrelease

import (
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestInstallable: a run that installs the controllers takes a release the
// repository declares only when it is embedded (or in the range it names);
// every other declaration is refused naming the embedded releases and the
// fix; a choice and the default are not the repository's.
func TestInstallable(t *testing.T) {
	embedded := []string{"v2.7.5", "v2.9.5"}
	loc := fluxrepo.Location{File: "clusters/dev/flux.yaml", Line: 10}
	decl := func(r Release) Release {
		r.From, r.Form, r.Location = FromRepository, FormOCIManifests, loc
		return r
	}
	for _, tc := range []struct {
		name string
		r    Release
		want []string // "": installable
	}{
		{"choice", Release{Version: "v2.7.5", From: FromFlag, Declared: "--flux-version"}, nil},
		{"default", Release{Version: "v2.9.5", From: FromDefault}, nil},
		{"declared, embedded", decl(Release{Version: "v2.7.5", Declared: "v2.7.5"}), nil},
		{"declared range", decl(Release{Version: "v2.9.5", Declared: "2.x"}), nil},
		{"patch not embedded", decl(Release{Version: "v2.7.5", Declared: "v2.7.9", Judged: "judged by v2.7.5"}),
			[]string{"Flux v2.7.9, declared by " + FormOCIManifests + " at clusters/dev/flux.yaml:10, is not embedded", "v2.7.5, v2.9.5", "--flux-version", "--manifests"}},
		{"old", decl(Release{Declared: "v0.41.2", Old: true}), []string{"older than every release embedded", "--flux-version"}},
		{"unresolved", decl(Release{Version: "v2.9.5", Declared: "${FLUX}", Fallback: true, Unresolved: "the variable FLUX is defined nowhere"}),
			[]string{"names no release known offline (the variable FLUX is defined nowhere)", "--flux-version"}},
		{"not known", decl(Release{Version: "v2.9.5", Declared: "v3.1.0", Fallback: true}), []string{`"v3.1.0" at clusters/dev/flux.yaml:10 names no release this build embeds`}},
		{"operator refuses", decl(Release{Version: "v2.9.5", Declared: "two", Fallback: true, Fails: "parse error", Fix: "write a range"}), []string{"parse error; fix: write a range"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.r.Installable(embedded)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !verify.IsInput(err) {
				t.Fatalf("err = %v, want an input error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%v\ndoes not say %q", err, w)
				}
			}
		})
	}
}

// TestLine: the plan's first line is the fact, with what a choice overrides.
func TestLine(t *testing.T) {
	r := Release{Version: "v2.9.5", From: FromFlag, Declared: "--flux-version", Notes: []string{`--flux-version overrides x "v2.7.5" at f:3`}}
	if got := r.Line(); got != `Flux v2.9.5 (--flux-version): --flux-version overrides x "v2.7.5" at f:3` {
		t.Errorf("Line() = %q", got)
	}
	if got := (Release{Version: "v2.9.5", From: FromDefault}).Line(); got != "Flux v2.9.5 (the default: the repository declares no release)" {
		t.Errorf("Line() = %q", got)
	}
}
