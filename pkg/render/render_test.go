package render

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/resid"

	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/components/bundles"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

func bundle(t *testing.T, version string) Options {
	t.Helper()
	b, err := bundles.Open(version)
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions(version, b)
	o.Components = []string{"source-controller", "kustomize-controller"}
	return o
}

func verdicts(res *Result) map[string]verify.Verdict {
	out := map[string]verify.Verdict{}
	for _, c := range res.Checks {
		out[c.ID] = c.Verdict
	}
	return out
}

// TestRender: the repository's shipped overlays/ as a directory prove out
// on v2.4.0; no overlay fails the strict gate there (kustomize-controller
// v1.4.0 defaults StrictPostBuildSubstitutions off) and passes on v2.9.5
// (on by default from v1.9.0); a patch aimed at nothing fails its
// patch-landed proof; a patch replacing the args list loses generated args.
func TestRender(t *testing.T) {
	kc := &types.Selector{ResId: resid.NewResIdKindOnly("Deployment", "kustomize-controller")}
	for _, tt := range []struct {
		name    string
		version string
		mutate  func(*Options)
		want    map[string]verify.Verdict
	}{
		{"shipped overlays dir", "v2.4.0", func(o *Options) { o.Overlays = os.DirFS("../../overlays") },
			map[string]verify.Verdict{"overlay.patch-landed/1": verify.Pass, "controllers.strict-substitution": verify.Pass, "overlay.args-preserved": verify.Pass}},
		{"no overlay, v2.4.0", "v2.4.0", func(*Options) {},
			map[string]verify.Verdict{"controllers.strict-substitution": verify.Fail, "render.components": verify.Pass}},
		{"no overlay, v2.9.5", "v2.9.5", func(*Options) {},
			map[string]verify.Verdict{"controllers.strict-substitution": verify.Pass}},
		{"a patch aimed at nothing", "v2.4.0", func(o *Options) {
			o.Patches = []types.Patch{{Target: &types.Selector{ResId: resid.NewResIdKindOnly("Deployment", "kustomize-controler")},
				Patch: "- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --feature-gates=StrictPostBuildSubstitutions=true"}}
		}, map[string]verify.Verdict{"overlay.patch-landed/1": verify.Fail, "controllers.strict-substitution": verify.Fail}},
		{"a patch replacing the args", "v2.4.0", func(o *Options) {
			o.Patches = []types.Patch{{Target: kc,
				Patch: "- op: replace\n  path: /spec/template/spec/containers/0/args\n  value: [--feature-gates=StrictPostBuildSubstitutions=true]"}}
		}, map[string]verify.Verdict{"overlay.patch-landed/1": verify.Pass, "overlay.args-preserved": verify.Fail}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := bundle(t, tt.version)
			tt.mutate(&o)
			res, err := Render(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			got := verdicts(res)
			for id, v := range tt.want {
				if got[id] != v {
					t.Errorf("%s: %s, want %s", id, got[id], v)
				}
			}
			if len(res.Objects) == 0 || len(res.YAML) == 0 {
				t.Error("no objects or YAML")
			}
		})
	}
}

// TestRenderPhrases: Options.Phrases reach the proofs; without them the
// proofs say the library's words.
func TestRenderPhrases(t *testing.T) {
	for _, tt := range []struct {
		name  string
		words patches.Phrases
		want  string
	}{
		{"the library's words", patches.Phrases{}, "no overlay sets it; apply an overlay that appends --feature-gates=StrictPostBuildSubstitutions=true"},
		{"the caller's", patches.Phrases{StrictOverlay: "strict.yaml"}, "no overlay sets it; apply strict.yaml"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := bundle(t, "v2.4.0")
			o.Phrases = tt.words
			res, err := Render(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			var msg string
			for _, c := range res.Checks {
				if c.ID == patches.GateStrict.ID {
					msg = c.Message
				}
			}
			if !strings.HasSuffix(msg, tt.want) {
				t.Errorf("%s says %q, want it to end %q", patches.GateStrict.ID, msg, tt.want)
			}
		})
	}
}

// TestRenderRefuses: what Render refuses before it renders.
func TestRenderRefuses(t *testing.T) {
	for _, tt := range []struct {
		name   string
		mutate func(*Options)
		want   string
		// field is the Options field a *components.OptionError names ("":
		// another error).
		field string
	}{
		{"no bundle", func(o *Options) { o.Bundle = nil }, "Options.Bundle is nil", "Bundle"},
		{"no version", func(o *Options) { o.FluxVersion = "" }, "Options.FluxVersion is empty", "FluxVersion"},
		{"overlays and patches", func(o *Options) {
			o.Overlays = os.DirFS("../../overlays")
			o.Patches = []types.Patch{{Patch: "x"}}
		}, "both set", "Overlays"},
		{"not a bundle", func(o *Options) { o.Bundle = fstest.MapFS{"README.md": {Data: []byte("x")}} }, "is not a Flux release bundle: missing rbac.yaml, policies.yaml", ""},
		{"unknown component", func(o *Options) { o.Components = []string{"nope-controller"} }, "unknown component nope-controller", "Components"},
		{"a bad log level", func(o *Options) { o.LogLevel = "loud" }, `Options.LogLevel "loud" is not one of debug, info, error`, "LogLevel"},
		{"a patch with a path", func(o *Options) { o.Patches = []types.Patch{{Path: "x.yaml"}} }, "needs an inline patch", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := bundle(t, "v2.4.0")
			tt.mutate(&o)
			_, err := Render(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error containing %q", err, tt.want)
			}
			var oe *components.OptionError
			if errors.As(err, &oe) != (tt.field != "") || (oe != nil && oe.Field != tt.field) {
				t.Errorf("got %#v, want a *components.OptionError on %q", err, tt.field)
			}
		})
	}
}

// TestEffectiveGateUnknownController: a controller not rendered is an error.
func TestEffectiveGateUnknownController(t *testing.T) {
	res, err := Render(context.Background(), bundle(t, "v2.4.0"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := res.EffectiveGate("helm-controller", "StrictPostBuildSubstitutions"); err == nil || !strings.Contains(err.Error(), "not among the rendered controllers") {
		t.Fatalf("got %v", err)
	}
}
