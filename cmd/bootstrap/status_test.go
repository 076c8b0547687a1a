package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/controllers"
	"github.com/homelab-ops/bootstrap/internal/converge"
	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/status"
)

// The status command line: input errors exit 2 before any cluster is
// contacted.
func TestStatusCLIRefusals(t *testing.T) {
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
		{"bad secret name", []string{"--secret-name", "Not_A_Name"}, "--secret-name"},
		{"no kubeconfig", []string{"--kubeconfig", "/nonexistent/kubeconfig"}, "/nonexistent/kubeconfig"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, append([]string{"status", "-o", "json"}, tc.args...)...)
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

// TestStatusUnreachable: a cluster that does not answer is not checked, so
// status exits 3 (never 0, never "healthy"), names the API server, and
// lists every gate it could not run as skip.
func TestStatusUnreachable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, "status", "-o", "json", "--kubeconfig", kc, "--request-timeout", "2s")
	var doc cliDoc
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s\n%s", err, r.stdout, r.stderr)
	}
	if r.code != 3 || doc.ExitCode != 3 {
		t.Fatalf("exit %d (report %d), want 3:\n%s", r.code, doc.ExitCode, r.stdout)
	}
	reach := doc.check(controllers.GateReachable.ID)
	if reach.Verdict != "skip" || !strings.Contains(reach.Message, "127.0.0.1:1") {
		t.Errorf("cluster.reachable: %+v", reach)
	}
	for _, id := range []string{controllers.GateDrift.ID, status.GateTemporary.ID, converge.GateGraph.ID} {
		if c := doc.check(id); c.Verdict != "skip" {
			t.Errorf("%s: %q, want skip (not run)", id, c.Verdict)
		}
	}
}

type cliDoc struct {
	ExitCode int
	Checks   []struct{ ID, Verdict, Message string }
}

func (d cliDoc) check(id string) struct{ ID, Verdict, Message string } {
	for _, c := range d.Checks {
		if c.ID == id {
			return c
		}
	}
	return struct{ ID, Verdict, Message string }{ID: id, Verdict: "missing"}
}

// TestStatusDocsListEveryGate: docs/status.md names every gate status can
// report.
func TestStatusDocsListEveryGate(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/status.md")
	if err != nil {
		t.Fatal(err)
	}
	phases := []pipeline.Phase{
		controllers.NewStatusPhase(controllers.StatusOptions{}, nil),
		agekey.NewVerifyPhase(agekey.Options{}, nil),
		status.NewSourcePhase(status.SourceOptions{Render: &rootsync.Render{}}, nil),
		converge.NewStatusPhase(nil, converge.Options{}),
		status.NewReadOnlyPhase(kube.NewRequests()),
	}
	n := 0
	for _, p := range phases {
		for _, d := range p.Gates() {
			n++
			want := "`" + d.ID
			if d.Prefix {
				want += "/"
			} else {
				want += "`"
			}
			if !strings.Contains(string(b), want) {
				t.Errorf("docs/status.md does not name gate %s (%s)", d.ID, d.Title)
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d gates", n)
	}
}
