//go:build e2e

package e2e

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestCutoverWithoutFlux, on a sandbox of its own that never had Flux (in
// any order, alone or not): on a real API server that does not serve
// source.toolkit.fluxcd.io/v1, cutover says Flux is not installed and how
// to fix it (exit 1), instead of printing the raw discovery error. So does
// `sync --dry-run`: with no controllers phase in the run to plan Flux's
// CRDs, "not installed" is not planned past (only `up --dry-run` plans
// it: TestDryRunFreshCluster).
func TestCutoverWithoutFlux(t *testing.T) {
	cli := bootstrapCLI(t)
	g, err := startGEnv(context.Background(), "noflux", t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer g.stop()
	for _, args := range [][]string{
		{"cutover", "-o", "json"},
		{"cutover", "-o", "json", "--dry-run", "--to", "https://git.lan/homelab/gitops.git"},
		{"sync", "-o", "json", "--dry-run", "--repo", filepath.Join(suite.root, "testdata", "homelab"), "--env", "dev"},
	} {
		cmd := exec.Command(cli, append(args, "--kubeconfig", g.sb.KubeconfigPath)...)
		code, _, stderr, r := runJSON(t, cmd)
		if code != 1 || !strings.Contains(r.Error, "Flux is not installed in this cluster: run `bootstrap controllers`") {
			t.Errorf("%v: exit %d, error %q; want 1 and the fix\n%s", args, code, r.Error, stderr)
		}
		if strings.Contains(r.Error, "no matches for") || strings.Contains(r.Error, "the server could not find") {
			t.Errorf("%v: the raw discovery error leaks: %q", args, r.Error)
		}
	}
}
