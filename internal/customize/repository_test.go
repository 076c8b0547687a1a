package customize

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/components"
	"github.com/homelab-ops/bootstrap/pkg/patches"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// syncPatch customizes the root's GitRepository in the same kustomization:
// the flux bootstrap docs' way of changing the sync, not a controller.
const syncPatch = `
  - patch: |
      - op: replace
        path: /spec/interval
        value: 5m
    target:
      kind: GitRepository
      name: flux-system
`

// bootstrapLayout copies testdata/layouts/bootstrap with staging's
// gotk-components.yaml replaced by the plain render of version (what `flux
// install --export` commits) and edit applied to its kustomization.yaml.
func bootstrapLayout(t *testing.T, version string, edit func(string) string) *fluxrepo.Env {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "testdata", "layouts", "bootstrap"))); err != nil {
		t.Fatal(err)
	}
	plain, err := Run(context.Background(), Options{Components: components.DefaultOptions(version), Overlays: Source{Kind: SourceNone}})
	if err != nil {
		t.Fatal(err)
	}
	fsd := filepath.Join(dir, "clusters", "staging", "flux-system")
	if err := os.WriteFile(filepath.Join(fsd, "gotk-components.yaml"), plain.YAML, 0o644); err != nil {
		t.Fatal(err)
	}
	k, err := os.ReadFile(filepath.Join(fsd, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fsd, "kustomization.yaml"), []byte(edit(string(k))), 0o644); err != nil {
		t.Fatal(err)
	}
	env, err := fluxrepo.Load(fluxrepo.Options{Repo: dir, Path: "clusters/staging", Namespace: "flux-system", RootName: "flux-system", KeepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestRepositoryCustomization: in the flux bootstrap layout the controllers
// are rendered with the patches of clusters/<env>/flux-system/
// kustomization.yaml (the root applies them again after every sync), each
// proven naming that file; gotk-sync.yaml's objects stay the sync's; the
// committed gotk-components.yaml must be this render.
func TestRepositoryCustomization(t *testing.T) {
	t.Parallel()
	const kust = "clusters/staging/flux-system/kustomization.yaml"
	same := func(s string) string { return s }
	for _, tt := range []struct {
		name      string
		committed string // Flux version of the committed gotk-components.yaml
		edit      func(string) string
		want      map[string]verify.Verdict
		msg       map[string]string
	}{
		{"as committed, a sync patch beside", "v2.9.5", func(s string) string { return s + syncPatch }, map[string]verify.Verdict{
			patches.GatePatchLanded.ID + "/1": verify.Pass, patches.GatePatchLanded.ID + "/2": verify.Pass,
			patches.GateStrict.ID: verify.Pass, patches.GateCommitted.ID: verify.Pass, patches.GateArgsPreserved.ID: verify.Pass,
		}, map[string]string{
			patches.GatePatchLanded.ID + "/1": kust + " patches[0] (inline) → Deployment/kustomize-controller changed Deployment/flux-system/kustomize-controller",
			patches.GatePatchLanded.ID + "/2": "changed GitRepository/flux-system/flux-system: not a controller; the sync applies it with the root",
		}},
		{"committed components of another release", "v2.4.0", same, map[string]verify.Verdict{patches.GateCommitted.ID: verify.Fail},
			map[string]string{patches.GateCommitted.ID: "clusters/staging/flux-system/gotk-components.yaml differs from this render"}},
		{"the strict gate dropped from the patch", "v2.9.5", func(s string) string {
			return strings.Replace(s, "StrictPostBuildSubstitutions=true", "StrictPostBuildSubstitutions=false", 1)
		}, map[string]verify.Verdict{patches.GateStrict.ID: verify.Fail, patches.GatePatchLanded.ID + "/1": verify.Pass}, nil},
		{"a patch whose target is nothing", "v2.9.5", func(s string) string {
			return strings.Replace(s, "name: kustomize-controller", "name: kustomize-controler", 1)
		},
			map[string]verify.Verdict{patches.GatePatchLanded.ID + "/1": verify.Fail}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := bootstrapLayout(t, tt.committed, tt.edit)
			o := Options{Components: components.DefaultOptions("v2.9.5")}
			if err := o.UseRepository(env); err != nil {
				t.Fatal(err)
			}
			if o.Overlays.Kind != SourceRepository || o.Overlays.Name != "clusters/staging/flux-system" {
				t.Fatalf("overlays %q, kind %d", o.Overlays.Name, o.Overlays.Kind)
			}
			out, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			got := verdicts(out)
			for id, v := range tt.want {
				if got[id] != v {
					t.Errorf("%s: %s, want %s: %s", id, got[id], v, check(t, out, id).Message)
				}
			}
			for id, m := range tt.msg {
				if c := check(t, out, id); !strings.Contains(c.Message, m) {
					t.Errorf("%s: %q, want it to contain %q", id, c.Message, m)
				}
			}
			if strings.Contains(string(out.YAML), "git.example.invalid") || strings.Contains(string(out.YAML), "path: ./clusters/staging") {
				t.Error("gotk-sync.yaml's objects are in the controllers' render: they are the sync's")
			}
			if !strings.Contains(out.Facts["overlays"], "clusters/staging/flux-system") {
				t.Errorf("facts: overlays %q", out.Facts["overlays"])
			}
		})
	}
}

// TestRepositoryCustomizationRefusesFlags: --overlays and --plain would be
// undone by the root's next apply of the repository's customization.
func TestRepositoryCustomizationRefusesFlags(t *testing.T) {
	t.Parallel()
	env := bootstrapLayout(t, "v2.9.5", func(s string) string { return s })
	for _, tt := range []struct {
		name string
		o    Options
		want string
	}{
		{"--overlays", Options{Overlays: Source{Kind: SourceDir, Name: "./mine"}}, "--overlays ./mine: the repository keeps the controllers' customization in clusters/staging/flux-system"},
		{"--plain", Options{Overlays: Source{Kind: SourceNone}}, "--plain: the repository keeps the controllers' customization in clusters/staging/flux-system"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.o.UseRepository(env)
			if !verify.IsInput(err) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an input error containing %q", err, tt.want)
			}
		})
	}
	// The repository's own layout keeps no controllers: nothing changes.
	home, err := fluxrepo.Load(fluxrepo.Options{Repo: filepath.Join("..", "..", "testdata", "homelab"), Path: "clusters/dev", Namespace: "flux-system", RootName: "flux-system", KeepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Overlays: Source{Kind: SourceNone}}
	if err := o.UseRepository(home); err != nil || o.Overlays.Kind == SourceRepository {
		t.Fatalf("homelab: %v, kind %d", err, o.Overlays.Kind)
	}
}

// TestInstanceCustomization: where a FluxInstance declares the sync (the
// Flux Operator layout), the controllers are rendered with its
// spec.kustomize.patches — the customization the operator applies to the
// manifests it generates — each proven naming the file, line and field;
// --overlays and --plain are refused, naming the instance.
func TestInstanceCustomization(t *testing.T) {
	t.Parallel()
	const hr = "kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml"
	load := func(t *testing.T, edit func(string) string) *fluxrepo.Env {
		t.Helper()
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "testdata", "layouts", "operator"))); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(hr))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
		env, err := fluxrepo.Load(fluxrepo.Options{Repo: dir, Path: "kubernetes/flux/cluster", Namespace: "flux-system", RootName: "flux-system", KeepGoing: true})
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	for _, tt := range []struct {
		name    string
		edit    func(string) string
		verdict verify.Verdict
		msg     string
	}{
		{"as written", func(s string) string { return s }, verify.Pass, hr + ":24 spec.values.instance.kustomize patches[0] (inline) → Deployment/kustomize-controller changed Deployment/flux-system/kustomize-controller"},
		{"a target that matches nothing", func(s string) string {
			return strings.Replace(s, "name: kustomize-controller", "name: kustomize-controler", 1)
		}, verify.Fail, hr + ":24 spec.values.instance.kustomize patches[0]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := Options{Components: components.DefaultOptions("v2.9.5")}
			if err := o.UseRepository(load(t, tt.edit)); err != nil {
				t.Fatal(err)
			}
			out, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			var landed verify.Check
			for _, c := range out.Checks {
				if c.ID == patches.GatePatchLanded.ID+"/1" {
					landed = c
				}
			}
			if landed.Verdict != tt.verdict || !strings.Contains(landed.Message, tt.msg) {
				t.Errorf("%s: %s %q, want %s containing %q", patches.GatePatchLanded.ID, landed.Verdict, landed.Message, tt.verdict, tt.msg)
			}
			if tt.verdict == verify.Pass && !strings.Contains(string(out.YAML), "--requeue-dependency=5s") {
				t.Error("the render lacks the instance's --requeue-dependency=5s")
			}
		})
	}
	env := load(t, func(s string) string { return s })
	for _, o := range []Options{{Overlays: Source{Kind: SourceDir, Name: "my-overlays"}}, {Overlays: Source{Kind: SourceNone}}} {
		if err := o.UseRepository(env); !verify.IsInput(err) || !strings.Contains(err.Error(), hr+":18") {
			t.Errorf("%+v: %v, want an input error naming the FluxInstance", o, err)
		}
	}
}
