package fluxrepo

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestBuildError: a Kustomization whose path does not build holds a
// BuildError naming it, its spec.path and the reason, and still an input
// error with the message the loader always wrote; a path that builds holds
// none.
func TestBuildError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		mutate     func(t *testing.T, repo string)
		kust, path string
		reason     BuildReason
		want       string
	}{
		{name: "path not found", mutate: func(t *testing.T, r string) {
			edit(t, r, "clusters/base/apps.yaml", "path: ./apps", "path: ./gone")
		}, kust: "flux-system/apps", path: "./gone", reason: PathNotFound,
			want: `Kustomization flux-system/apps (clusters/base/apps.yaml:1): spec.path "./gone" is not a directory of the repository`},
		{name: "build failed", mutate: func(t *testing.T, r string) {
			edit(t, r, "infrastructure/kustomization.yaml", "- cni.yaml", "- missing.yaml")
		}, kust: "flux-system/infra", path: "./infrastructure", reason: BuildFailed,
			want: `Kustomization flux-system/infra (clusters/base/infrastructure.yaml:1): kustomize build of spec.path "./infrastructure" failed`},
		{name: "component under resources", mutate: func(t *testing.T, r string) {
			if err := os.MkdirAll(filepath.Join(r, "apps", "comp"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(r, "apps", "comp", "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncommonLabels: {c: d}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(r, "apps", "kustomization.yaml"), []byte("resources:\n- web.yaml\n- comp\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, kust: "flux-system/apps", path: "./apps", reason: ComponentUnderResources,
			want: `Kustomization flux-system/apps (clusters/base/apps.yaml:1): kustomize build of spec.path "./apps" failed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := copyTree(t, clean)
			tc.mutate(t, repo)
			e, err := Load(Options{Repo: repo, Path: "clusters/dev", KeepGoing: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range e.Kustomizations {
				var be *BuildError
				if k.Ref() != tc.kust {
					if errors.As(k.Err, &be) {
						t.Errorf("%s: unexpected BuildError %v", k.Ref(), be)
					}
					continue
				}
				if !errors.As(k.Err, &be) {
					t.Fatalf("%s: Err %v (%T) is no BuildError", k.Ref(), k.Err, k.Err)
				}
				if be.Kustomization != tc.kust || be.Path != tc.path || be.Reason != tc.reason || be.Location != k.Location {
					t.Errorf("BuildError = %+v, want %s path %s reason %d at %s", be, tc.kust, tc.path, tc.reason, k.Location)
				}
				if !verify.IsInput(k.Err) || !strings.HasPrefix(k.Err.Error(), tc.want) {
					t.Errorf("Err = %v, want an input error beginning %q", k.Err, tc.want)
				}
				if strings.HasPrefix(be.Cause.Error(), "Kustomization ") {
					t.Errorf("Cause names the Kustomization again: %v", be.Cause)
				}
				return
			}
			t.Fatalf("no Kustomization %s", tc.kust)
		})
	}
}
