package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
)

// TestSupplyInputErrors: --supply is read and validated before the first
// request (the kubeconfig names no reachable cluster: a request would exit
// 1, not 2), stdin is read once, and no value is ever printed.
func TestSupplyInputErrors(t *testing.T) {
	t.Parallel()
	const value = "never-print-this-value"
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: cluster-extra\n  namespace: flux-system\nstringData:\n  X: " + value + "\n"
	unknown := write("unknown.yaml", secret+"---\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d\n  namespace: default\nspec:\n  x: "+value+"\n")
	noNS := write("nons.yaml", strings.Replace(secret, "  namespace: flux-system\n", "", 1))
	key, _, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	repo := []string{"--repo", "../../testdata/layouts/taskfile", "--path", "kubernetes/flux", "--root", "cluster"}
	tests := []struct {
		name  string
		stdin string
		args  []string
		msg   string
	}{
		{"an unknown kind, named with its file and document", "", []string{"sync", "--supply", unknown}, unknown + " document 2 is apiVersion \"apps/v1\" kind \"Deployment\""},
		{"up refuses it too", "", []string{"up", "--supply", unknown}, "document 2"},
		{"no namespace", "", []string{"sync", "--supply", noNS}, "needs metadata.name and metadata.namespace"},
		{"a missing file", "", []string{"sync", "--supply", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"stdin twice", secret, []string{"sync", "--supply", "-", "--supply", "-"}, "stdin is read once"},
		{"stdin taken by the age key", key, []string{"up", "--age-key-file", "-", "--supply", "-"}, "--supply - and --age-key-file - both read stdin"},
		{"an unknown kind on stdin", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\n", []string{"sync", "--supply", "-"}, "--supply - (stdin) document 1 is apiVersion \"v1\" kind \"Pod\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := cli(t, tt.stdin, nil, append(append(tt.args, repo...), "--dry-run")...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("exit %d, want 2; stderr should say %q:\n%s", r.code, tt.msg, r.stderr)
			}
			if strings.Contains(r.stdout+r.stderr, value) || strings.Contains(strings.ToUpper(r.stdout+r.stderr), "AGE-SECRET-KEY-") {
				t.Errorf("a value is printed:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
}
