package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// TestKustomizeNoticesFiltered: kustomize (api v0.21,
// internal/target/kusttarget.go) prints "# Warning: 'commonLabels' is
// deprecated…" to os.Stderr at each build of a kustomization.yaml using
// it; with the filter on, it reaches neither the report nor stderr, while
// every other line written to os.Stderr still does. Without the filter
// (the negative case) the notice is there.
func TestKustomizeNoticesFiltered(t *testing.T) {
	repo := fixture(t, mutation{"infrastructure/kustomization.yaml", "", "commonLabels:\n  team: infra\n"})
	for _, filtered := range []bool{false, true} {
		t.Run(fmt.Sprint("filtered=", filtered), func(t *testing.T) {
			out, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			// Stand in for the process's stderr: what reaches it lands in out.
			real := os.Stderr
			os.Stderr = out
			restore := func() {}
			if filtered {
				restore = FilterKustomizeNotices(out)
			}
			r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/dev"}, NoCompare: true})
			fmt.Fprintln(os.Stderr, "another line")
			restore()
			os.Stderr = real
			if err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(out.Name())
			if got := strings.Contains(string(b), "'commonLabels' is deprecated"); got == filtered {
				t.Errorf("stderr has the notice: %v, want %v:\n%s", got, !filtered, b)
			}
			if !strings.Contains(string(b), "another line\n") {
				t.Errorf("stderr lost another line:\n%s", b)
			}
			for _, c := range r.Checks {
				if strings.Contains(text(c), "deprecated") {
					t.Errorf("%s: %s", c.ID, text(c))
				}
			}
		})
	}
}
