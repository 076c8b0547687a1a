package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
)

// runAgeKey runs the command line with stdin and an environment of its
// own, and scans every output channel, and every file the run left in its
// TMPDIR, for age key material. A file the scan cannot read fails the test.
func runAgeKey(t *testing.T, stdin string, env []string, args ...string) (result, map[string]any) {
	t.Helper()
	tmp := t.TempDir()
	out := t.TempDir()
	reportJSON, junit := filepath.Join(out, "report.json"), filepath.Join(out, "junit.xml")
	t.Setenv("TMPDIR", tmp)
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	res := cli(t, stdin, vars, append(args, "--report-json", reportJSON, "--junit", junit)...)
	clean := func(what, s string) {
		if strings.Contains(strings.ToUpper(s), "AGE-SECRET-KEY-") {
			t.Errorf("%s holds age key material:\n%s", what, s)
		}
	}
	clean("stdout", res.stdout)
	clean("stderr", res.stderr)
	for _, dir := range []string{tmp, out} {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			clean(p, string(b))
			return nil
		})
		if err != nil {
			t.Errorf("scan %s for key material: %v", dir, err)
		}
	}
	var doc map[string]any
	if b, err := os.ReadFile(reportJSON); err == nil {
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Errorf("--report-json: %v", err)
		}
	}
	return res, doc
}

// TestAgeKeyCLIRefusals: age-key's refusals and reports, none holding key
// material. Not parallel: runAgeKey points the process's TMPDIR (t.Setenv)
// at a directory of its own to scan what the libraries' temporary files
// (os.MkdirTemp reads the process's TMPDIR) left behind.
func TestAgeKeyCLIRefusals(t *testing.T) {
	devKey, devR, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	prodKey, prodR, _ := agekeytest.NewIdentity()
	repo := t.TempDir()
	if err := agekeytest.WriteRepo(repo,
		agekeytest.Env{Name: "dev", Recipients: []string{devR}, Value: "d"},
		agekeytest.Env{Name: "prod", Recipients: []string{prodR}, Value: "p"}); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "dev.key")
	if err := os.WriteFile(keyFile, []byte(devKey), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"age-key", "--repo", repo}
	tests := []struct {
		name   string
		stdin  string
		env    []string
		args   []string
		code   int
		stderr string
	}{
		{"empty stdin", "", nil, []string{"--path", "clusters/dev", "--age-key-file", "-"}, 2, "is empty"},
		{"public key on stdin", devR + "\n", nil, []string{"--path", "clusters/dev", "--age-key-file", "-"}, 2, "age public key (a recipient"},
		{"truncated key", devKey[:len(devKey)-20], nil, []string{"--path", "clusters/dev", "--age-key-file", "-"}, 2, "malformed age identity"},
		{"no key at all", "", nil, []string{"--path", "clusters/dev"}, 2, "no age identity given"},
		{"no --path", devKey, nil, []string{"--age-key-file", "-"}, 2, "which environment?"},
		{"unknown environment", devKey, nil, []string{"--path", "clusters/qa", "--age-key-file", "-"}, 2, "(clusters/ has dev, prod)"},
		// The wrong environment's key: refused before the cluster is
		// touched (there is no kubeconfig, so connecting would be exit 2).
		{"key of another environment", prodKey, nil, []string{"--path", "clusters/dev", "--age-key-file", "-"}, 1, "not installed"},
		{"wrong key from SOPS_AGE_KEY", "", []string{"SOPS_AGE_KEY=" + prodKey}, []string{"--path", "clusters/dev"}, 1, "is encrypted to someone else"},
		// The right key gets as far as the cluster, which is missing here.
		{"right key, no cluster", "", []string{"SOPS_AGE_KEY_FILE=" + keyFile}, []string{"--path", "clusters/dev"}, 2, "kubeconfig"},
		{"verify, no cluster", "", nil, []string{"verify", "--path", "clusters/dev"}, 2, "kubeconfig"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append(append([]string{}, base...), tc.args...)
			if tc.args[0] == "verify" {
				args = append([]string{"age-key", "verify", "--repo", repo}, tc.args[1:]...)
			}
			res, doc := runAgeKey(t, tc.stdin, tc.env, args...)
			if res.code != tc.code || !strings.Contains(res.stderr, tc.stderr) {
				t.Errorf("exit %d, want %d; stderr should say %q:\n%s", res.code, tc.code, tc.stderr, res.stderr)
			}
			if doc == nil || int(doc["exitCode"].(float64)) != tc.code {
				t.Errorf("JSON report: %v", doc)
			}
			if doc != nil && doc["changed"] != false {
				t.Errorf("changed: %v", doc["changed"])
			}
		})
	}

	t.Run("json on stdout", func(t *testing.T) {
		res, _ := runAgeKey(t, prodKey, nil, append(base, "--path", "clusters/dev", "--age-key-file", "-", "-o", "json")...)
		var doc map[string]any
		if err := json.Unmarshal([]byte(res.stdout), &doc); err != nil || res.code != 1 {
			t.Fatalf("exit %d, stdout %q: %v", res.code, res.stdout, err)
		}
	})
	t.Run("group-readable key file warns", func(t *testing.T) {
		open := filepath.Join(t.TempDir(), "open.key")
		if err := os.WriteFile(open, []byte(devKey), 0o640); err != nil {
			t.Fatal(err)
		}
		res, _ := runAgeKey(t, "", nil, append(base, "--path", "clusters/dev", "--age-key-file", open)...)
		if !strings.Contains(res.stderr, "chmod 600") {
			t.Errorf("no mode warning:\n%s", res.stderr)
		}
	})
}
