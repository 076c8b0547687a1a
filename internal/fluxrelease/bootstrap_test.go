package fluxrelease

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// TestBootstrapInstall (issue 54): the Flux install the repository's own
// bootstrap applies (a Taskfile's kubectl apply --kustomize of flux2's
// manifests/install?ref=v2.4.0) declares the release; the Taskfile line
// removed, the repository declares none.
func TestBootstrapInstall(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		removeLine bool
		want       string
	}{
		{name: "as committed", want: "Flux v2.4.0, declared by " + FormBootstrap + " (Taskfile task flux:bootstrap: kubectl apply --kustomize kubernetes/bootstrap/flux (.taskfiles/flux/Taskfile.yaml:8)) at kubernetes/bootstrap/flux/kustomization.yaml:5"},
		{name: "the install line removed", removeLine: true, want: "(the default: the repository declares no release)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := t.TempDir()
			if err := os.CopyFS(repo, os.DirFS("../../testdata/layouts/taskfile")); err != nil {
				t.Fatal(err)
			}
			if tc.removeLine {
				p := filepath.Join(repo, ".taskfiles/flux/Taskfile.yaml")
				b, _ := os.ReadFile(p)
				line := "      - kubectl apply --server-side --kustomize {{.KUBERNETES_DIR}}/bootstrap/flux\n"
				if !strings.Contains(string(b), line) {
					t.Fatal("no install line")
				}
				if err := os.WriteFile(p, []byte(strings.Replace(string(b), line, "", 1)), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			env, err := fluxrepo.Load(fluxrepo.Options{Repo: repo, Path: "kubernetes/flux", RootName: "cluster", KeepGoing: true, Holes: true})
			if err != nil {
				t.Fatal(err)
			}
			r, err := ForEnv(env, "", "")
			if err != nil {
				t.Fatal(err)
			}
			if got := r.String(); !strings.Contains(got, tc.want) {
				t.Fatalf("%s; want %q", got, tc.want)
			}
		})
	}
}
