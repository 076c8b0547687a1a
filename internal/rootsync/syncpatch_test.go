package rootsync

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const patchedLayout = "../../testdata/layouts/instance-patches"

// TestDeclaredObjectsPatched: the sync objects a FluxInstance declares are
// created as the Flux Operator builds them, with its spec.kustomize.patches
// applied (flux-operator internal/builder templates.go kustomizationTmpl:
// sync.yaml and the patches are one kustomize build): the OCIRepository
// carries spec.verify, the root Kustomization spec.timeout. A target that
// matches neither leaves them as generated; a patch that selects one but
// cannot apply is an input error naming the FluxInstance.
func TestDeclaredObjectsPatched(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		edit     func(string) string
		provider string // the OCIRepository's spec.verify.provider ("" absent)
		timeout  string // the Kustomization's spec.timeout
		err      string
	}{
		{"as written", func(s string) string { return s }, "cosign", "3m", ""},
		{"targets that match nothing", func(s string) string {
			return strings.ReplaceAll(s, "name: flux-system", "name: flux-sytem")
		}, "", "", ""},
		{"a patch that cannot apply", func(s string) string {
			return strings.Replace(s, "op: add\n            path: /spec/timeout", "op: remove\n            path: /spec/nothere", 1)
		}, "", "", "flux/instance.yaml:17 spec.kustomize.patches"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			if err := os.CopyFS(dir, os.DirFS(patchedLayout)); err != nil {
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
			r, err := Build(Options{Repo: dir, Path: "clusters/staging", Namespace: "flux-system", RootName: "flux-system"})
			if tt.err != "" {
				if !verify.IsInput(err) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("%v, want an input error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Source == nil || r.Source.GetKind() != "OCIRepository" {
				t.Fatalf("source %v", r.Source)
			}
			got, _, _ := unstructured.NestedString(r.Source.Object, "spec", "verify", "provider")
			if got != tt.provider {
				t.Errorf("OCIRepository spec.verify.provider %q, want %q", got, tt.provider)
			}
			if tag, _, _ := unstructured.NestedString(r.Source.Object, "spec", "ref", "tag"); tag != "latest" {
				t.Errorf("OCIRepository spec.ref.tag %q, want latest (the generated fields kept)", tag)
			}
			var timeout string
			for _, u := range r.Objects {
				if u.GetKind() == "Kustomization" && u.GetName() == "flux-system" {
					timeout, _, _ = unstructured.NestedString(u.Object, "spec", "timeout")
				}
			}
			if timeout != tt.timeout {
				t.Errorf("Kustomization spec.timeout %q, want %q", timeout, tt.timeout)
			}
			// The gates judge the root as created: the typed root is the patched one.
			if got := r.Root.Spec.Timeout; (got == nil) != (tt.timeout == "") || (got != nil && got.Duration.String() != "3m0s") {
				t.Errorf("the typed root's spec.timeout %v, want %q", got, tt.timeout)
			}
		})
	}
}
