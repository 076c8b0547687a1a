package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ciWrapper is a bootstrap binary for the CI script: this test binary as
// the CLI (TestCIHelperProcess).
func ciWrapper(t *testing.T) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the CI script is bash")
	}
	for _, tool := range []string{"bash", "od", "grep", "head"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "bootstrap")
	wrapper := "#!/bin/sh\n" + ciHelperEnv + "=1 exec '" + self + "' -test.run='^TestCIHelperProcess$' -- \"$@\"\n"
	if err := os.WriteFile(bin, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestActionDiffMode runs hack/ci/check.sh as action.yml's mode: diff
// does, on the seed's repository: the Markdown file and the step outputs
// (changed, failed, windows, the comment body between a delimiter no line
// of it is), whatever the verdict; a failure at head is exit 1 with its
// Markdown; a bad mode or revision is exit 2.
func TestActionDiffMode(t *testing.T) {
	t.Parallel()
	bin := ciWrapper(t)
	script, err := filepath.Abs("../../hack/ci/check.sh")
	if err != nil {
		t.Fatal(err)
	}
	repo := seedRepo(t, nil)
	broken := seedRepo(t, func(dir string) {
		if err := os.WriteFile(filepath.Join(dir, "infra", "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - missing.yaml\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		name    string
		env     map[string]string
		code    int
		stderr  string
		outputs []string // lines of GITHUB_OUTPUT
		md      string   // in the Markdown
	}{
		{name: "the seed's commit: its window in the comment", env: map[string]string{"CHECK_REPO": repo, "CHECK_BASE": "HEAD~1", "CHECK_HEAD": "HEAD", "CHECK_ARGS": "--flux-version v2.8.5"},
			code: 0, stderr: "window steps: 1", outputs: []string{"exit-code=0", "markdown=bootstrap-diff.md", "changed=true", "failed=false", "windows=1"},
			md: "renders `k8sServiceHost: null` (fail open on this release)"},
		{name: "no change, another file, one environment", env: map[string]string{"CHECK_REPO": repo, "CHECK_BASE": "HEAD", "CHECK_HEAD": "HEAD", "CHECK_ENV": "dev", "CHECK_MARKDOWN": "out.md"},
			code: 0, outputs: []string{"markdown=out.md", "changed=false", "windows=0"}, md: "| clusters/dev | — |"},
		{name: "fails at head: exit 1, the Markdown says it", env: map[string]string{"CHECK_REPO": broken},
			code: 1, stderr: "fails to build at head", outputs: []string{"exit-code=1", "changed=true", "failed=true"}, md: "**FAIL**"},
		{name: "an unknown revision", env: map[string]string{"CHECK_REPO": repo, "CHECK_BASE": "nosuchbranch"},
			code: 2, stderr: `--base "nosuchbranch": no such revision`, outputs: []string{"exit-code=2", "markdown=", "changed=false"}},
		{name: "an unknown mode", env: map[string]string{"CHECK_REPO": repo, "CHECK_MODE": "dif"},
			code: 2, stderr: "CHECK_MODE=dif: want check or diff"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			work := t.TempDir()
			cmd := exec.Command("bash", script)
			cmd.Dir = work
			cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + work, "KUBECONFIG=" + filepath.Join(work, "none"),
				"CHECK_BIN=" + bin, "CHECK_MODE=diff", "GITHUB_OUTPUT=" + filepath.Join(work, "github-output")}
			for k, v := range tc.env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.stderr) {
				t.Fatalf("exit %d, want %d and %q in the output:\n%s", code, tc.code, tc.stderr, out)
			}
			if len(tc.outputs) == 0 {
				return
			}
			gh, err := os.ReadFile(filepath.Join(work, "github-output"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(string(gh), "\n")
			for _, w := range tc.outputs {
				if !contains(lines, w) {
					t.Errorf("GITHUB_OUTPUT lacks %q:\n%s", w, gh)
				}
			}
			if tc.md == "" {
				if strings.Contains(string(gh), "comment<<") && !regexp.MustCompile(`comment<<(\S+)\n(\S+)\n`).MatchString(string(gh)) {
					t.Errorf("a comment body without a Markdown written:\n%s", gh)
				}
				return
			}
			name := "bootstrap-diff.md"
			if n := tc.env["CHECK_MARKDOWN"]; n != "" {
				name = n
			}
			md, err := os.ReadFile(filepath.Join(work, name))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(md), tc.md) {
				t.Errorf("the Markdown lacks %q:\n%s", tc.md, md)
			}
			// comment<<DELIM, the Markdown, DELIM.
			m := regexp.MustCompile(`(?s)comment<<(BOOTSTRAP_DIFF_[0-9a-f]{16})\n(.*)\n(BOOTSTRAP_DIFF_[0-9a-f]{16})\n`).FindStringSubmatch(string(gh))
			if m == nil || m[1] != m[3] || m[2]+"\n" != string(md) && m[2] != string(md) {
				t.Errorf("the comment output is not the Markdown between one delimiter:\n%s", gh)
			}
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

// TestActionInputs: every input of action.yml reaches the script as the
// CHECK_* variable the script reads, every output is one the script
// writes, and mode: diff's inputs are there.
func TestActionInputs(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var action struct {
		Inputs  map[string]struct{ Default string }
		Outputs map[string]struct{ Value string }
		Runs    struct {
			Steps []struct {
				ID  string
				Env map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(b, &action); err != nil {
		t.Fatal(err)
	}
	script, err := os.ReadFile("../../hack/ci/check.sh")
	if err != nil {
		t.Fatal(err)
	}
	if len(action.Runs.Steps) != 1 {
		t.Fatalf("%d steps, want the one running the script", len(action.Runs.Steps))
	}
	env := action.Runs.Steps[0].Env
	for _, in := range []string{"mode", "base", "head", "markdown"} {
		if _, ok := action.Inputs[in]; !ok {
			t.Errorf("input %s missing", in)
		}
	}
	if action.Inputs["mode"].Default != "check" {
		t.Errorf("mode defaults to %q, want check", action.Inputs["mode"].Default)
	}
	for in := range action.Inputs {
		v := "CHECK_" + strings.ToUpper(strings.ReplaceAll(in, "-", "_"))
		if env[v] != "${{ inputs."+in+" }}" {
			t.Errorf("input %s does not reach the script as %s: %q", in, v, env[v])
		}
		if !strings.Contains(string(script), "${"+v) {
			t.Errorf("the script does not read %s", v)
		}
	}
	for out, o := range action.Outputs {
		if o.Value != "${{ steps.check.outputs."+out+" }}" {
			t.Errorf("output %s: %q", out, o.Value)
		}
		if !regexp.MustCompile(`echo "` + regexp.QuoteMeta(out) + `(=|<<)`).Match(script) {
			t.Errorf("the script does not write the output %s", out)
		}
	}
}
