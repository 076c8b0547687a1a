//go:build e2e

package e2e

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCutoverWithoutFlux runs first (file order), before any test installs
// Flux's CRDs: on a real API server that does not serve
// source.toolkit.fluxcd.io/v1, cutover and sync say Flux is not installed
// and how to fix it (exit 1), instead of printing the raw discovery error.
func TestCutoverWithoutFlux(t *testing.T) {
	cli := bootstrapCLI(t)
	for _, args := range [][]string{
		{"cutover", "-o", "json"},
		{"cutover", "-o", "json", "--dry-run", "--to", "https://git.lan/homelab/gitops.git"},
	} {
		cmd := exec.Command(cli, append(args, "--kubeconfig", suite.sb.KubeconfigPath)...)
		code, _, stderr, r := runJSON(t, cmd)
		if code != 1 || !strings.Contains(r.Error, "Flux is not installed in this cluster: run `bootstrap controllers`") {
			t.Errorf("%v: exit %d, error %q; want 1 and the fix\n%s", args, code, r.Error, stderr)
		}
		if strings.Contains(r.Error, "no matches for") || strings.Contains(r.Error, "the server could not find") {
			t.Errorf("%v: the raw discovery error leaks: %q", args, r.Error)
		}
	}
}
