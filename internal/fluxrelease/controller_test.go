package fluxrelease

import (
	"context"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestStrictOf: an explicit gate wins, else the controller's recorded
// default (off before kustomize-controller v1.9.0), else off, said so.
func TestStrictOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, kv, version string
		args              []string
		on                bool
		why               string
	}{
		{name: "default off", kv: "v1.3.0", version: "v2.3.0", why: "kustomize-controller v1.3.0 (Flux v2.3.0) defaults StrictPostBuildSubstitutions to false"},
		{name: "default on", kv: "v1.9.3", version: "v2.9.3", on: true, why: "kustomize-controller v1.9.3 (Flux v2.9.3) defaults StrictPostBuildSubstitutions to true"},
		{name: "set", kv: "v1.3.0", version: "v2.3.0", args: []string{"--feature-gates=StrictPostBuildSubstitutions=true"}, on: true,
			why: "StrictPostBuildSubstitutions=true set by here (kustomize-controller v1.3.0)"},
		{name: "default not recorded", kv: "", version: "v2.3.0", why: "kustomize-controller  (Flux v2.3.0): the default of StrictPostBuildSubstitutions is not recorded, taken as off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := patches.ParseArgs(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if got := strictOf(f, tc.kv, tc.version, "here"); got != (Strictness{On: tc.on, Why: tc.why}) {
				t.Errorf("%+v; want on=%t %q", got, tc.on, tc.why)
			}
		})
	}
}

// TestWatchOf: the selector as kustomize-controller parses it; one it
// refuses (it exits at start-up) is an input error naming where it is set.
func TestWatchOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		args     []string
		selector string
		explicit bool
		off      string
		err      string
	}{
		{name: "default"},
		{name: "a selector", args: []string{"--watch-configs-label-selector=owner!=helm"}, selector: "owner!=helm", explicit: true},
		{name: "watchers off", args: []string{"--feature-gates=DisableConfigWatchers=true"}, off: "--feature-gates=DisableConfigWatchers=true set by here: it watches no ConfigMap or Secret"},
		{name: "not a selector", args: []string{"--watch-configs-label-selector=owner in (helm"}, err: "kustomize-controller's --watch-configs-label-selector=owner in (helm, set by here, is not a label selector"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := patches.ParseArgs(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			w, err := watchOf(f, "v1.9.3", "here")
			if tc.err != "" {
				if !verify.IsInput(err) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v; want an input error with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.Selector != tc.selector || w.Explicit != tc.explicit || w.Off != tc.off || (w.Predicate == nil) != (tc.off != "") || w.Default != DefaultWatch().Default {
				t.Errorf("%+v; want selector %q explicit %t off %q", w, tc.selector, tc.explicit, tc.off)
			}
		})
	}
}

// TestDeployed: the release and kustomize-controller's strictness there,
// as check and diff both take them (testdata/releases/up-pinned: Flux
// v2.7.5, whose kustomize-controller defaults strict off, turned on by
// the repository's flux-system/kustomization.yaml patch).
func TestDeployed(t *testing.T) {
	t.Parallel()
	patchOff := edit{"clusters/dev/flux-system/kustomization.yaml", "value: --feature-gates=StrictPostBuildSubstitutions=true\n", "value: --concurrent=4\n"}
	for _, tc := range []struct {
		name            string
		edits           []edit
		explicit        string
		release, strict string
		on              bool
	}{
		{name: "as committed", release: "Flux v2.7.5, declared by", on: true,
			strict: "StrictPostBuildSubstitutions=true set by clusters/dev/flux-system (kustomize-controller v1.7.3)"},
		{name: "the patch removed", edits: []edit{patchOff}, release: "Flux v2.7.5, declared by",
			strict: "(Flux v2.7.5) defaults StrictPostBuildSubstitutions to false"},
		{name: "an older release chosen", explicit: "v2.3.0", release: "Flux v2.3.0 (--flux-version)", on: true,
			strict: "StrictPostBuildSubstitutions=true set by clusters/dev/flux-system (kustomize-controller v1.3.0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := loadCopy(t, "releases/up-pinned", fluxrepo.Options{Path: "clusters/dev", KeepGoing: true, Holes: true}, tc.edits...)
			rel, kc, err := Deployed(context.Background(), env, tc.explicit, "--flux-version", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(rel.String(), tc.release) {
				t.Errorf("release %s; want %q", rel, tc.release)
			}
			if kc.Strict.On != tc.on || !strings.Contains(kc.Strict.Why, tc.strict) || !kc.Rendered || kc.Unread != nil {
				t.Errorf("%+v (rendered %t, unread %v); want on=%t, %q", kc.Strict, kc.Rendered, kc.Unread, tc.on, tc.strict)
			}
		})
	}
}

// TestKustomizeControllerOld: a release older than every embedded one is
// not rendered; its kustomize-controller substitutes without strict mode.
func TestKustomizeControllerOld(t *testing.T) {
	t.Parallel()
	kc, err := KustomizeController(context.Background(), nil, Release{Old: true, Declared: "v0.41.2"})
	if err != nil {
		t.Fatal(err)
	}
	if kc.Strict.On || !strings.HasPrefix(kc.Strict.Why, "Flux v0.41.2's kustomize-controller substitutes without StrictPostBuildSubstitutions") || kc.Rendered || kc.Watch.Explicit || kc.Watch.Predicate == nil {
		t.Errorf("%+v", kc)
	}
}
