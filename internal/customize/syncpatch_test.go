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

// TestInstanceSyncPatches: the Flux Operator applies a FluxInstance's
// spec.kustomize.patches to the sync objects in the same build as the
// controllers (flux-operator internal/builder templates.go
// kustomizationTmpl), so overlay.patch-landed judges each patch against the
// controllers and the sync's OCIRepository and Kustomization: one that lands
// on a sync object only passes, naming it; one that matches nothing in
// either fails. The sync objects stay out of the controllers' render
// (phase sync applies them).
func TestInstanceSyncPatches(t *testing.T) {
	t.Parallel()
	const inst = "flux/instance.yaml:17 spec.kustomize"
	load := func(t *testing.T, edit func(string) string) *fluxrepo.Env {
		t.Helper()
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "testdata", "layouts", "instance-patches"))); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "flux", "instance.yaml")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(edit(string(b))), 0o644); err != nil {
			t.Fatal(err)
		}
		env, err := fluxrepo.Load(fluxrepo.Options{Repo: dir, Path: "clusters/staging", Namespace: "flux-system", RootName: "flux-system", KeepGoing: true})
		if err != nil {
			t.Fatal(err)
		}
		return env
	}
	type want struct {
		verdict verify.Verdict
		msg     string
	}
	for _, tt := range []struct {
		name string
		edit func(string) string
		want []want // patch-landed/1, /2, /3
	}{
		{"as written", func(s string) string { return s }, []want{
			{verify.Pass, inst + " patches[0] (inline) → OCIRepository/flux-system lands on the sync's OCIRepository/flux-system/flux-system (applied by phase sync"},
			{verify.Pass, inst + " patches[1] (inline) → Kustomization/flux-system lands on the sync's Kustomization/flux-system/flux-system (applied by phase sync"},
			{verify.Pass, inst + " patches[2] (inline) → Deployment/kustomize-controller changed Deployment/flux-system/kustomize-controller"},
		}},
		{"a sync target that matches nothing", func(s string) string {
			return strings.Replace(s, "kind: OCIRepository\n          name: flux-system", "kind: OCIRepository\n          name: flux-sytem", 1)
		}, []want{
			{verify.Fail, inst + " patches[0] (inline) → OCIRepository/flux-sytem changed nothing"},
			{verify.Pass, "lands on the sync's Kustomization/flux-system/flux-system"},
			{verify.Pass, "changed Deployment/flux-system/kustomize-controller"},
		}},
		{"a kind the sync does not have", func(s string) string {
			return strings.Replace(s, "kind: OCIRepository\n          name: flux-system", "kind: GitRepository\n          name: flux-system", 1)
		}, []want{
			{verify.Fail, inst + " patches[0] (inline) → GitRepository/flux-system changed nothing"},
			{verify.Pass, "lands on the sync's Kustomization"},
			{verify.Pass, "changed Deployment/flux-system/kustomize-controller"},
		}},
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
			for i, w := range tt.want {
				id := patches.GatePatchLanded.ID + "/" + string(rune('1'+i))
				var got *verify.Check
				for j := range out.Checks {
					if out.Checks[j].ID == id {
						got = &out.Checks[j]
					}
				}
				if got == nil {
					t.Fatalf("no %s", id)
				}
				if got.Verdict != w.verdict || !strings.Contains(got.Message, w.msg) {
					t.Errorf("%s: %s %q, want %s containing %q", id, got.Verdict, got.Message, w.verdict, w.msg)
				}
				if w.verdict == verify.Fail && !strings.Contains(strings.Join(got.Evidence, "\n"), "the FluxInstance's sync objects: OCIRepository/flux-system/flux-system, Kustomization/flux-system/flux-system") {
					t.Errorf("%s evidence %q lacks the sync objects", id, got.Evidence)
				}
			}
			y := string(out.YAML)
			if strings.Contains(y, "token.actions.example.invalid") || strings.Contains(y, "\nkind: OCIRepository\n") {
				t.Error("the controllers' render holds the sync objects; phase sync applies them")
			}
			if !strings.Contains(y, "--requeue-dependency=5s") {
				t.Error("the render lacks the instance's --requeue-dependency=5s")
			}
		})
	}
}
