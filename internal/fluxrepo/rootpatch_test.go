package fluxrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestRootPatched: a root a FluxInstance declares is, in Env.Root (the
// model check judges), the Kustomization the Flux Operator creates: with
// its spec.kustomize.patches applied (testdata/layouts/instance-patches
// patches spec.timeout to 3m). SyncObjects stay as generated and
// DeclaredObjects patch them once: a patch that cannot apply twice (a
// remove) applies. Without the patches, the root is as generated; a patch
// the typed Kustomization refuses is an input error naming the
// FluxInstance.
func TestRootPatched(t *testing.T) {
	t.Parallel()
	const timeoutPatch = "          - op: add\n            path: /spec/timeout\n            value: 3m\n"
	for _, tt := range []struct {
		name    string
		edit    func(string) string
		timeout time.Duration // Env.Root's spec.timeout (0: unset)
		prune   bool          // Env.Root's spec.prune
		err     string
	}{
		{"as written", func(s string) string { return s }, 3 * time.Minute, true, ""},
		{"a remove applies once", func(s string) string {
			return strings.Replace(s, timeoutPatch, timeoutPatch+"          - op: remove\n            path: /spec/prune\n", 1)
		}, 3 * time.Minute, false, ""},
		{"no patch on the Kustomization", func(s string) string {
			return strings.Replace(s, timeoutPatch, "          - op: add\n            path: /metadata/labels\n            value: {team: a}\n", 1)
		}, 0, true, ""},
		{"a patch the Kustomization type refuses", func(s string) string {
			return strings.Replace(s, "value: 3m", "value: soon", 1)
		}, 0, false, "flux/instance.yaml:17 spec.kustomize.patches: the patched Kustomization flux-system/flux-system"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS("../../testdata/layouts/instance-patches")); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, "flux", "instance.yaml")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(tt.edit(string(b))), 0o644); err != nil {
				t.Fatal(err)
			}
			e, err := Load(Options{Repo: dir, Path: "clusters/staging", Namespace: "flux-system", RootName: "flux-system", KeepGoing: true})
			if tt.err != "" {
				if !verify.IsInput(err) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("%v, want an input error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if e.Root == nil || e.Origin.Layout != LayoutFluxInstance {
				t.Fatalf("root %v, origin %s", e.Root, e.Origin)
			}
			var got time.Duration
			if e.Root.Spec.Timeout != nil {
				got = e.Root.Spec.Timeout.Duration
			}
			if got != tt.timeout || e.Root.Spec.Prune != tt.prune {
				t.Errorf("Env.Root spec.timeout %s, prune %t; want %s, %t", got, e.Root.Spec.Prune, tt.timeout, tt.prune)
			}
			if e.Kustomizations[0] != e.Root {
				t.Errorf("Kustomizations[0] is not Env.Root")
			}
			// SyncObjects: as generated, before the patches.
			syncObjs, err := e.SyncObjects()
			if err != nil {
				t.Fatal(err)
			}
			k := kustomizationOf(t, syncObjs)
			if _, ok, _ := unstructured.NestedFieldNoCopy(k.Object, "spec", "timeout"); ok {
				t.Errorf("SyncObjects' Kustomization has spec.timeout: patched before the operator's build")
			}
			if prune, _, _ := unstructured.NestedBool(k.Object, "spec", "prune"); !prune {
				t.Errorf("SyncObjects' Kustomization has no prune: true: patched before the operator's build")
			}
			// DeclaredObjects: patched once, the root as Env.Root.
			declared, err := e.DeclaredObjects()
			if err != nil {
				t.Fatal(err)
			}
			k = kustomizationOf(t, declared)
			timeout, _, _ := unstructured.NestedString(k.Object, "spec", "timeout")
			if tt.timeout != 0 && timeout != "3m" || tt.timeout == 0 && timeout != "" {
				t.Errorf("DeclaredObjects' spec.timeout %q, want as Env.Root's (%s)", timeout, tt.timeout)
			}
			if prune, _, _ := unstructured.NestedBool(k.Object, "spec", "prune"); prune != tt.prune {
				t.Errorf("DeclaredObjects' prune %t, want %t", prune, tt.prune)
			}
		})
	}
}

func kustomizationOf(t *testing.T, objs []*unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == "Kustomization" && u.GetName() == "flux-system" {
			return u
		}
	}
	t.Fatalf("no Kustomization flux-system among %d object(s)", len(objs))
	return nil
}
