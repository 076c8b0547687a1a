package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/sandbox"
	"github.com/homelab-ops/bootstrap/internal/sandbox/registry"
)

// TestDiffChartsBadInput: the --charts flags are checked before anything
// is fetched: exit 2 naming the flag and the fix, nothing on stdout.
func TestDiffChartsBadInput(t *testing.T) {
	t.Parallel()
	repo := seedRepo(t, nil)
	notPEM := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"--charts-ca-file without --charts", []string{"--charts-ca-file", notPEM}, "--charts-ca-file applies to --charts: add --charts"},
		{"--charts-timeout without --charts", []string{"--charts-timeout", "5s"}, "--charts-timeout applies to --charts"},
		{"--charts-ca-file not PEM", []string{"--charts", "--charts-ca-file", notPEM}, "holds no PEM certificate"},
		{"--charts-ca-file missing", []string{"--charts", "--charts-ca-file", notPEM + ".missing"}, "--charts-ca-file"},
		{"--charts-timeout 0", []string{"--charts", "--charts-timeout", "0s"}, "--charts-timeout 0s: a positive duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, append([]string{"diff", "--repo", repo, "--base", "HEAD~1", "--head", "HEAD"}, tc.args...)...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("exit %d, want 2 and %q:\n%s", r.code, tc.want, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout written on bad input:\n%s", r.stdout)
			}
		})
	}
}

// TestDiffChartsCLI: --charts against the sandbox's chart registry
// in-process: a HelmRelease added in the work tree shows its chart's
// manifests, trusted through --charts-ca-file; without the CA the chart is
// a note and the diff still succeeds.
func TestDiffChartsCLI(t *testing.T) {
	t.Parallel()
	pki, err := sandbox.GeneratePKI(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Start(pki, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	if _, _, err := reg.PushChart(context.Background(), "../../internal/chartrender/testdata/charts/web", "1.0.0"); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.crt")
	if err := os.WriteFile(ca, reg.CA(), 0o600); err != nil {
		t.Fatal(err)
	}
	web := fmt.Sprintf(`apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: apps
spec:
  interval: 1h
  url: %s
  ref:
    tag: 1.0.0
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: apps
spec:
  interval: 30m
  chartRef:
    kind: OCIRepository
    name: web
`, reg.ChartURL("web"))
	repo := seedRepo(t, func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "infra", "web.yaml"), []byte(web), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	r := runCLI(t, "diff", "--repo", repo, "--base", "HEAD", "--charts", "--charts-ca-file", ca)
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range []string{"chart of HelmRelease apps/web: nothing (Helm install) → web 1.0.0 from OCIRepository apps/web", "+      - image: registry.example/web:1.0.0"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
		}
	}
	r = runCLI(t, "diff", "--repo", repo, "--base", "HEAD", "--charts")
	if r.code != 0 || !strings.Contains(r.stdout, "note: head: the chart is not rendered:") || !strings.Contains(r.stdout, "certificate") {
		t.Errorf("without the CA: exit %d, want 0 and a note:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
