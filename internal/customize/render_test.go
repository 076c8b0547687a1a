package customize

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/kio"

	bootstrap "github.com/homelab-ops/bootstrap"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/internal/versions"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// homelabExtras are the extra controllers the homelab installs.
var homelabExtras = []string{"image-reflector-controller", "image-automation-controller"}

func shipped(t testing.TB) fs.FS {
	t.Helper()
	sub, err := fs.Sub(bootstrap.Overlays, "overlays")
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func options(t testing.TB, version string, overlays fs.FS, name string) Options {
	o := components.DefaultOptions(version)
	o.ComponentsExtra = homelabExtras
	return Options{Components: o, Overlays: Source{Kind: SourceDir, FS: overlays, Name: name}}
}

func fixture(name string) (fs.FS, string) {
	p := filepath.Join("testdata", "overlays", name)
	return os.DirFS(p), p
}

func verdicts(out *Output) map[string]verify.Verdict {
	m := map[string]verify.Verdict{}
	for _, c := range out.Checks {
		m[c.ID] = c.Verdict
	}
	return m
}

func check(t *testing.T, out *Output, id string) verify.Check {
	t.Helper()
	for _, c := range out.Checks {
		if c.ID == id {
			return c
		}
	}
	t.Fatalf("no check %s in %v", id, verdicts(out))
	return verify.Check{}
}

// summary is the golden form of a render: our own text derived from it (the
// upstream manifests themselves are never committed).
func summary(t *testing.T, out *Output) string {
	t.Helper()
	var b strings.Builder
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(out.YAML), OmitReaderAnnotations: true}).Read()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "# objects: %d\n", len(nodes))
	for _, n := range nodes {
		fmt.Fprintf(&b, "%s %s\n", n.GetKind(), strings.Trim(n.GetNamespace()+"/"+n.GetName(), "/"))
	}
	for _, d := range out.Overlay.Final {
		for _, c := range d.Spec.Template.Spec.Containers {
			fmt.Fprintf(&b, "\n# Deployment/%s container %s\nimage: %s\n", d.Name, c.Name, c.Image)
			for _, a := range c.Args {
				fmt.Fprintf(&b, "arg: %s\n", a)
			}
		}
	}
	b.WriteString("\n# gates\n")
	for _, c := range out.Checks {
		fmt.Fprintf(&b, "%s %s: %s\n", c.Verdict, c.ID, c.Message)
	}
	return b.String()
}

func TestGolden(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"v2.9.5", "v2.4.0"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			out, err := Run(context.Background(), options(t, version, shipped(t), "overlays"))
			if err != nil {
				t.Fatal(err)
			}
			got := summary(t, out)
			path := filepath.Join("testdata", "golden", "homelab-"+version+".txt")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./pkg/render -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("render of %s differs from %s; if intended, run go test ./pkg/render -update and review the diff\n--- got ---\n%s", version, path, got)
			}
		})
	}
}

func TestShippedOverlay(t *testing.T) {
	t.Parallel()
	tests := []struct {
		version, kc, want string
	}{
		{"v2.9.5", "kustomize-controller:v1.9.5", "on by default in kustomize-controller v1.9.5; the setting by the overlay is redundant here"},
		{"v2.4.0", "kustomize-controller:v1.4.0", "only because of the overlay: kustomize-controller v1.4.0 defaults it to false"},
	}
	for _, tt := range tests {
		t.Run(tt.version, func(t *testing.T) {
			t.Parallel()
			out, err := Run(context.Background(), options(t, tt.version, shipped(t), "overlays"))
			if err != nil {
				t.Fatal(err)
			}
			r := verify.NewReport("render")
			r.Add(out.Checks...)
			if session.ReportCode(r) != session.ExitOK {
				t.Fatalf("exit %d: %v", session.ReportCode(r), verdicts(out))
			}
			if c := check(t, out, patches.GateStrict.ID); !strings.Contains(c.Message, tt.want) {
				t.Errorf("strict gate message %q does not say %q", c.Message, tt.want)
			}
			if !bytes.Contains(out.YAML, []byte(tt.kc)) || !bytes.Contains(out.YAML, []byte("--feature-gates=StrictPostBuildSubstitutions=true")) {
				t.Errorf("render lacks %s with the strict gate", tt.kc)
			}
			if bytes.Contains(out.YAML, []byte("internal.config.kubernetes.io")) {
				t.Error("kustomize build annotations leaked into the render")
			}
			if n := len(out.Overlay.Final); n != 6 {
				t.Errorf("want 6 Deployments with the homelab extras, got %d", n)
			}
		})
	}
}

// TestGatesFail breaks the overlay in each way the gates must catch.
func TestGatesFail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, fixture, version string
		failing                string
		message                string
	}{
		{"misspelled target", "misspelled-target", "v2.9.5", patches.GatePatchLanded.ID + "/1", "Deployment/kustomize-controler changed nothing"},
		{"strategic merge replaces args", "smp-replaces-args", "v2.9.5", patches.GateArgsPreserved.ID, "generated arg(s) lost"},
		{"later patch disables the gate", "later-disable", "v2.9.5", patches.GateStrict.ID, "turned off by the overlay (--feature-gates=StrictPostBuildSubstitutions=false)"},
		{"no-op patch", "noop", "v2.9.5", patches.GatePatchLanded.ID + "/2", "changed nothing"},
		{"patch kustomize cannot apply", "bad-json-path", "v2.9.5", patches.GatePatchLanded.ID + "/1", "could not be applied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ov, name := fixture(tt.fixture)
			out, err := Run(context.Background(), options(t, tt.version, ov, name))
			if err != nil {
				t.Fatal(err)
			}
			c := check(t, out, tt.failing)
			if c.Verdict != verify.Fail {
				t.Fatalf("%s: verdict %s, want fail (%s)", tt.failing, c.Verdict, c.Message)
			}
			if !strings.Contains(c.Message, tt.message) {
				t.Errorf("message %q does not say %q", c.Message, tt.message)
			}
			r := verify.NewReport("render")
			r.Add(out.Checks...)
			if session.ReportCode(r) != session.ExitFailed {
				t.Errorf("exit %d, want 1", session.ReportCode(r))
			}
		})
	}
}

func TestEmptyOverlays(t *testing.T) {
	t.Parallel()
	empty := os.DirFS(t.TempDir())
	// v2.4.0 defaults strict substitution off: without the overlay the
	// invariant does not hold.
	out, err := Run(context.Background(), options(t, "v2.4.0", empty, "empty"))
	if err != nil {
		t.Fatal(err)
	}
	if c := check(t, out, patches.GateStrict.ID); c.Verdict != verify.Fail || !strings.Contains(c.Message, "defaults it off and no overlay sets it") {
		t.Errorf("v2.4.0 without overlays: %s %q, want fail", c.Verdict, c.Message)
	}
	out, err = Run(context.Background(), options(t, "v2.9.5", empty, "empty"))
	if err != nil {
		t.Fatal(err)
	}
	if c := check(t, out, patches.GateStrict.ID); c.Verdict != verify.Pass || !strings.Contains(c.Message, "by default") {
		t.Errorf("v2.9.5 without overlays: %s %q, want pass by default", c.Verdict, c.Message)
	}
}

func TestPlain(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"v2.4.0", "v2.9.5"} {
		o := options(t, version, shipped(t), "overlays")
		o.Overlays.Kind = SourceNone // --plain
		out, err := Run(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out.YAML, []byte("StrictPostBuildSubstitutions")) {
			t.Errorf("%s --plain: the overlay was applied anyway", version)
		}
		if c := check(t, out, patches.GatePlain.ID); c.Verdict != verify.Warn {
			t.Errorf("%s --plain: %s verdict %s, want warn", version, patches.GatePlain.ID, c.Verdict)
		}
		if len(out.Warnings) == 0 {
			t.Errorf("%s --plain: no run-wide warning", version)
		}
		r := verify.NewReport("render")
		r.Add(out.Checks...)
		if session.ReportCode(r) != session.ExitOK {
			t.Errorf("%s --plain: exit %d, want 0", version, session.ReportCode(r))
		}
	}
}

// TestBadInput: a bad overlay is an input error; a bad option is
// pkg/components' typed refusal naming its field, which cmd/bootstrap
// words with the flag (flagError).
func TestBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(*Options)
		want   string
		field  string // the Options field refused ("": an input error)
	}{
		{"malformed overlay YAML", func(o *Options) { o.Overlays.FS, o.Overlays.Name = fixture("malformed") }, "is not valid YAML", ""},
		{"overlay whose resources are not the components", func(o *Options) { o.Overlays.FS, o.Overlays.Name = fixture("unsupported-field") }, "resources must include gotk-components.yaml", ""},
		{"documented form without the components", func(o *Options) { o.Overlays.FS, o.Overlays.Name = fixture("convention-no-components") }, "resources must include gotk-components.yaml", ""},
		{"documented form with a remote resource", func(o *Options) { o.Overlays.FS, o.Overlays.Name = fixture("convention-remote") }, "is remote; an overlay may only use files inside its directory", ""},
		{"documented form with a resource outside", func(o *Options) { o.Overlays.FS, o.Overlays.Name = fixture("convention-outside") }, "is outside the overlay directory", ""},
		{"documented form with a stale export", func(o *Options) { o.Overlays.FS, o.Overlays.Name = fixture("convention-stale-export") }, "gotk-components.yaml exists in the overlay directory; remove it", ""},
		{"overlay dir without kustomization", func(o *Options) { o.Overlays.FS, o.Overlays.Name = fixture("no-kustomization") }, "has files but no kustomization.yaml", ""},
		{"unknown component", func(o *Options) { o.Components.ComponentsExtra = []string{"image-reflektor-controller"} }, "unknown component image-reflektor-controller; available in embedded Flux v2.9.5 release bundle: helm-controller, image-automation-controller", "Components"},
		{"unknown version", func(o *Options) { o.Components.FluxVersion = "v2.1.0" }, "Flux v2.1.0 is not embedded in this build (embedded: v2.2.3, v2.3.0", "FluxVersion"},
		{"bad log level", func(o *Options) { o.Components.LogLevel = "verbose" }, `LogLevel "verbose"`, "LogLevel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := options(t, "v2.9.5", shipped(t), "overlays")
			tt.mutate(&o)
			_, err := Run(context.Background(), o)
			var oe *components.OptionError
			switch {
			case tt.field == "" && !verify.IsInput(err):
				t.Fatalf("want an input error, got %v", err)
			case tt.field != "" && (!errors.As(err, &oe) || oe.Field != tt.field):
				t.Fatalf("want a *components.OptionError on %s, got %#v", tt.field, err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not say %q", err, tt.want)
			}
		})
	}
}

// TestEveryEmbeddedRelease renders every embedded Flux release with the
// shipped overlays, offline: every gate passes and the release has a
// minimum Kubernetes version for the cluster gate.
func TestEveryEmbeddedRelease(t *testing.T) {
	t.Parallel()
	pins, err := versions.Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(pins.EmbeddedFluxVersions) < 30 {
		t.Fatalf("%d embedded releases, want every release of the bundle module (30 from v2.2.3 to v2.9.5)", len(pins.EmbeddedFluxVersions))
	}
	for _, v := range pins.EmbeddedFluxVersions {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			if pins.MinKubernetes[v] == "" {
				t.Errorf("versions.env has no FLUX_MIN_KUBERNETES entry for %s", v)
			}
			out, err := Run(context.Background(), options(t, v, shipped(t), "overlays"))
			if err != nil {
				t.Fatal(err)
			}
			for id, verdict := range verdicts(out) {
				if verdict != verify.Pass && !unrecordedGates(out, id, verdict) && !strictGateMissing(t, out, id, verdict) {
					t.Errorf("%s: %s is %s", v, id, verdict)
				}
			}
			for _, d := range out.Overlay.Final {
				g := patches.SupportedGates(d.Name, patches.ImageVersion(patches.ManagerImage(&d)))
				if _, has := g.Defaults[patches.StrictSubstitution]; d.Name == "kustomize-controller" && g.Known && !has {
					if got := verdicts(out)[patches.GateFeatureGates.ID]; got != verify.Fail {
						t.Errorf("%s: %s is %s; the shipped overlay sets a gate its kustomize-controller lacks", v, patches.GateFeatureGates.ID, got)
					}
				}
			}
			if got := out.Facts["fluxVersion"]; got != v {
				t.Errorf("rendered %s, want %s", got, v)
			}
		})
	}
}

// TestDocumentedForm renders overlays in Flux's documented "customize Flux
// manifests" form: the kustomization itself is built with the render as
// gotk-components.yaml, and every patch is still proven on its own.
func TestDocumentedForm(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		fixture string
		check   func(t *testing.T, out *Output)
	}{
		{"flux-convention", func(t *testing.T, out *Output) {
			if !strings.Contains(string(out.YAML), "name: homelab-extra") {
				t.Error("the overlay's own resource is missing from the render")
			}
		}},
		{"convention-json6902-images", func(t *testing.T, out *Output) {
			if !strings.Contains(string(out.YAML), "image: registry.lan/fluxcd/source-controller:") {
				t.Error("images: did not rewrite source-controller's image")
			}
		}},
	} {
		t.Run(tt.fixture, func(t *testing.T) {
			t.Parallel()
			fsys, name := fixture(tt.fixture)
			out, err := Run(context.Background(), options(t, "v2.4.0", fsys, name))
			if err != nil {
				t.Fatal(err)
			}
			for id, v := range verdicts(out) {
				if v != verify.Pass && !unrecordedGates(out, id, v) {
					t.Errorf("%s: %s", id, v)
				}
			}
			if c := check(t, out, patches.GatePatchLanded.ID+"/1"); c.Verdict != verify.Pass {
				t.Errorf("the patch was not proven: %s", c.Message)
			}
			if c := check(t, out, patches.GateStrict.ID); !strings.Contains(c.Message, "only because of the overlay") {
				t.Errorf("strict gate: %s", c.Message)
			}
			tt.check(t, out)
		})
	}
}

// strictGateMissing: overlay.feature-gates fails the shipped overlay where
// the kustomize-controller version has no StrictPostBuildSubstitutions gate
// at all (Flux v2.2.3's v1.2.2: the gate is opt-in from v1.3, and main.go
// os.Exit(1)s on the unknown name after features.SupportedFeatures), and
// only there: the controller would not start.
func strictGateMissing(t *testing.T, out *Output, id string, v verify.Verdict) bool {
	t.Helper()
	if id != patches.GateFeatureGates.ID || v != verify.Fail {
		return false
	}
	for _, d := range out.Overlay.Final {
		if d.Name != "kustomize-controller" {
			continue
		}
		version := patches.ImageVersion(patches.ManagerImage(&d))
		g := patches.SupportedGates(d.Name, version)
		if _, has := g.Defaults[patches.StrictSubstitution]; !g.Known || has {
			return false
		}
		want := fmt.Sprintf("kustomize-controller %s does not support feature gate %q", version, patches.StrictSubstitution)
		if c := check(t, out, id); !strings.Contains(c.Message, want) {
			t.Errorf("%s: %s, want it to say %q", id, c.Message, want)
		}
		return true
	}
	return false
}

// unrecordedGates: overlay.feature-gates may only skip (optional) where
// the gate table has no record of the kustomize-controller version the
// shipped overlay sets a gate on (its module is not served here).
func unrecordedGates(out *Output, id string, v verify.Verdict) bool {
	if id != patches.GateFeatureGates.ID || v != verify.Skip {
		return false
	}
	for _, d := range out.Overlay.Final {
		if d.Name == "kustomize-controller" {
			return !patches.SupportedGates(d.Name, patches.ImageVersion(patches.ManagerImage(&d))).Known
		}
	}
	return false
}
