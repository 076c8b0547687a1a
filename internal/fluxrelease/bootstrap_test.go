package fluxrelease

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// edit replaces old by new, once, in file of a fixture's copy.
type edit struct{ file, old, new string }

// loadCopy loads o.Path of a copy of testdata/fixture after edits (o.Repo
// is the copy).
func loadCopy(t *testing.T, fixture string, o fluxrepo.Options, edits ...edit) *fluxrepo.Env {
	t.Helper()
	o.Repo = t.TempDir()
	if err := os.CopyFS(o.Repo, os.DirFS(filepath.Join("../../testdata", fixture))); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		p := filepath.Join(o.Repo, e.file)
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), e.old) {
			t.Fatalf("%s: %v, or no %q", e.file, err, e.old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e.old, e.new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env, err := fluxrepo.Load(o)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// TestBootstrapInstall (issue 54): the Flux install the repository's own
// bootstrap applies (a Taskfile's kubectl apply --kustomize of flux2's
// manifests/install?ref=v2.4.0) declares the release; the Taskfile line
// removed, the repository declares none.
func TestBootstrapInstall(t *testing.T) {
	t.Parallel()
	removeLine := edit{".taskfiles/flux/Taskfile.yaml", "      - kubectl apply --server-side --kustomize {{.KUBERNETES_DIR}}/bootstrap/flux\n", ""}
	for _, tc := range []struct {
		name  string
		edits []edit
		want  string
	}{
		{name: "as committed", want: "Flux v2.4.0, declared by " + FormBootstrap + " (Taskfile task flux:bootstrap: kubectl apply --kustomize kubernetes/bootstrap/flux (.taskfiles/flux/Taskfile.yaml:8)) at kubernetes/bootstrap/flux/kustomization.yaml:5"},
		{name: "the install line removed", edits: []edit{removeLine}, want: "(the default: the repository declares no release)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env := loadCopy(t, "layouts/taskfile", fluxrepo.Options{Path: "kubernetes/flux", RootName: "cluster", KeepGoing: true, Holes: true}, tc.edits...)
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
