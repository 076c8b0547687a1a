package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

const kubeconfigYAML = `apiVersion: v1
kind: Config
clusters:
- name: %[1]s
  cluster: {server: https://%[1]s.example:6443}
contexts:
- name: %[1]s
  context: {cluster: %[1]s, user: u}
users:
- name: u
  user: {token: t}
current-context: %[1]s
`

func writeKubeconfig(t *testing.T, dir, cluster string) string {
	t.Helper()
	p := filepath.Join(dir, cluster+".yaml")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(kubeconfigYAML, "%[1]s", cluster)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFlagsReadTheGivenEnvironment: the kubeconfig comes from getenv's
// KUBECONFIG and HOME and from --kubeconfig, never from the process's
// environment (which the tests do not touch: they run in parallel).
func TestFlagsReadTheGivenEnvironment(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := writeKubeconfig(t, dir, "a"), writeKubeconfig(t, dir, "b")
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(writeKubeconfig(t, dir, "home"), filepath.Join(home, ".kube", "config")); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		host string // "" for an error
		err  string
	}{
		{"KUBECONFIG", map[string]string{"KUBECONFIG": a, "HOME": home}, nil, "https://a.example:6443", ""},
		{"KUBECONFIG list, first wins", map[string]string{"KUBECONFIG": b + string(filepath.ListSeparator) + a + string(filepath.ListSeparator) + b}, nil, "https://b.example:6443", ""},
		{"HOME/.kube/config", map[string]string{"HOME": home}, nil, "https://home.example:6443", ""},
		{"--kubeconfig over KUBECONFIG", map[string]string{"KUBECONFIG": a}, []string{"--kubeconfig", b}, "https://b.example:6443", ""},
		{"--context", map[string]string{"KUBECONFIG": a + string(filepath.ListSeparator) + b}, []string{"--context", "b"}, "https://b.example:6443", ""},
		{"nothing in HOME", map[string]string{"HOME": empty}, nil, "", "no kubeconfig found; pass --kubeconfig or set KUBECONFIG"},
		{"KUBECONFIG names no file", map[string]string{"KUBECONFIG": filepath.Join(empty, "none"), "HOME": home}, nil, "", "no kubeconfig found"},
		{"--kubeconfig names no file", map[string]string{"HOME": home}, []string{"--kubeconfig", filepath.Join(empty, "none")}, "", "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := ClusterFlags(func(k string) string { return tc.env[k] })
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			f.AddFlags(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			cfg, err := Config(f)
			if tc.host == "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("Config: %v, want an error saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Host != tc.host || cfg.Timeout.String() != "30s" {
				t.Errorf("host %s timeout %s, want %s 30s", cfg.Host, cfg.Timeout, tc.host)
			}
		})
	}
}
