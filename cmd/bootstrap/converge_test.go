package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The converge command line: input errors exit 2 before any cluster is
// contacted.
func TestConvergeCLIRefusals(t *testing.T) {
	t.Parallel()
	const repo = "../../testdata/homelab"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"repo without environment", []string{"--repo", repo}, "--repo needs --env NAME or --path"},
		{"env and path", []string{"--repo", repo, "--env", "dev", "--path", "clusters/dev"}, "exclusive"},
		{"unknown environment", []string{"--repo", repo, "--env", "staging"}, "clusters/staging: no such directory"},
		{"bad root", []string{"--root", "flux-system/"}, "--root"},
		{"graph format", []string{"--graph", "g.png"}, ".mmd"},
		{"no kubeconfig", []string{"--repo", repo, "--env", "dev", "--kubeconfig", "/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, append([]string{"converge", "-o", "json"}, tc.args...)...)
			var doc struct {
				ExitCode int
				Error    string
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
			}
			if r.code != 2 || doc.ExitCode != 2 || !strings.Contains(doc.Error, tc.want) {
				t.Fatalf("exit %d (report %d), error %q; want 2 and %q", r.code, doc.ExitCode, doc.Error, tc.want)
			}
		})
	}
}

// TestConvergeUnreachable: a cluster that does not answer is named at once
// by cluster.reachable, as every other command does, not after --timeout.
func TestConvergeUnreachable(t *testing.T) {
	t.Parallel()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "converge", "--repo", "../../testdata/homelab", "--env", "dev", "--kubeconfig", kc, "--timeout", "2m", "-o", "json")
	var doc struct {
		ExitCode int
		Checks   []struct{ ID, Verdict, Message string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	if r.code != 1 || len(doc.Checks) == 0 || doc.Checks[0].ID != "converge.reachable" || doc.Checks[0].Verdict != "fail" || !strings.Contains(doc.Checks[0].Message, "127.0.0.1:1") {
		t.Fatalf("exit %d, checks %+v", r.code, doc.Checks)
	}
}
