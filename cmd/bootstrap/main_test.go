package main

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

type result struct {
	code           int
	stdout, stderr string
}

// cli runs the command line in-process (as flux2's executeCommand does),
// with stdin, an environment of its own and no kubeconfig unless env names
// one, and collects the exit code and both streams. The environment is
// run's getenv, never the process's: HOME is a directory of the test's
// own and KUBECONFIG names no file unless env says otherwise, so tests
// run in parallel (t.Parallel) without t.Setenv.
func cli(t *testing.T, stdin string, env map[string]string, args ...string) result {
	t.Helper()
	home := t.TempDir()
	vars := map[string]string{"HOME": home, "KUBECONFIG": filepath.Join(home, "no-kubeconfig")}
	maps.Copy(vars, env)
	var o, e bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(stdin), Out: &o, ErrOut: &e}
	code := run(context.Background(), args, streams, func(k string) string { return vars[k] })
	return result{code, o.String(), e.String()}
}

func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	return cli(t, "", nil, args...)
}

const fixtures = "../../internal/customize/testdata/overlays/"

func TestExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		code       int
		stderr     string
		emptyStdot bool
	}{
		{"homelab v2.4.0", []string{"render", "--flux-version", "v2.4.0", "--components-extra", "image-reflector-controller,image-automation-controller"}, 0,
			"StrictPostBuildSubstitutions=true only because of the overlay", false},
		{"misspelled target fails closed", []string{"render", "--overlays", fixtures + "misspelled-target"}, 1, "Deployment/kustomize-controler changed nothing", true},
		{"strategic merge replaces args", []string{"render", "--overlays", fixtures + "smp-replaces-args"}, 1, "lost --watch-all-namespaces=true", true},
		{"later patch disables the gate", []string{"render", "--overlays", fixtures + "later-disable"}, 1, "turned off by the overlay", true},
		{"no-op patch", []string{"render", "--overlays", fixtures + "noop"}, 1, "changed nothing", true},
		{"malformed overlay", []string{"render", "--overlays", fixtures + "malformed"}, 2, "kustomization.yaml is not valid YAML", true},
		{"overlays not a dir", []string{"render", "--overlays", "main.go"}, 2, "is not a directory", true},
		{"unknown component", []string{"render", "--components-extra", "nope-controller"}, 2, "unknown component nope-controller; available in", true},
		{"unknown version", []string{"render", "--flux-version", "v9.9.9"}, 2, "embedded: v2.2.3, v2.3.0, v2.4.0", true},
		{"bad tarball", []string{"render", "--manifests", "main.go"}, 2, "neither a directory nor a readable manifests.tar.gz", true},
		{"bad log level", []string{"render", "--log-level", "verbose"}, 2, `error: --log-level "verbose" is not one of debug, info, error`, true},
		{"not a bundle: the phase stopped on an input error", []string{"render", "--manifests", fixtures + "noop"}, 2, "render.components: not run: phase controllers stopped: input error", true},
		{"a component the declared release lacks", []string{"controllers", "--dry-run", "--repo", "../../testdata/releases/header", "--env", "dev", "--components-extra", "source-watcher"}, 2,
			"error: Flux v2.3.0, declared by flux bootstrap's gotk-components.yaml header at clusters/dev/flux-system/gotk-components.yaml:3: --components/--components-extra: unknown component source-watcher; available in embedded Flux v2.3.0", true},
		{"unknown flag", []string{"render", "--flux-verison", "v2.4.0"}, 2, "unknown flag: --flux-verison", true},
		{"bad output format", []string{"render", "-o", "yaml"}, 2, `--output "yaml"`, true},
		{"shipped overlay without its target", []string{"render", "--components", "source-controller"}, 1, "rendered Deployments: Deployment/flux-system/source-controller", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, tt.args...)
			if r.code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", r.code, tt.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.stderr) {
				t.Errorf("stderr does not say %q:\n%s", tt.stderr, r.stderr)
			}
			if tt.emptyStdot && r.stdout != "" {
				t.Errorf("a failed render must print no manifests, got %d bytes", len(r.stdout))
			}
			if tt.code == 0 && !strings.Contains(r.stdout, "kind: Deployment") {
				t.Errorf("no manifests on stdout")
			}
		})
	}
}

// TestIncomplete: with no kustomize-controller the strict gate cannot be
// checked, which is exit 3, never 0.
func TestIncomplete(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "render", "--components", "source-controller", "--overlays", t.TempDir())
	if r.code != 3 || !strings.Contains(r.stderr, "SKIP  controllers/before  controllers.strict-substitution") {
		t.Fatalf("exit %d, want 3 with a skipped strict gate\n%s", r.code, r.stderr)
	}
}

// TestPlainIsVisibleEverywhere: --plain passes (exit 0) but the warning is in
// the text, JSON and JUnit reports.
func TestPlainIsVisibleEverywhere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	junit := filepath.Join(dir, "junit.xml")
	reportJSON := filepath.Join(dir, "report.json")
	r := runCLI(t, "render", "--flux-version", "v2.4.0", "--plain", "--junit", junit, "--report-json", reportJSON)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "WARNING: --plain") || !strings.Contains(r.stderr, "WARN  controllers/before  overlay.plain") {
		t.Errorf("text report hides --plain:\n%s", r.stderr)
	}
	if strings.Contains(r.stdout, "StrictPostBuildSubstitutions") {
		t.Error("--plain still applied the overlay")
	}
	j, _ := os.ReadFile(junit)
	if !strings.Contains(string(j), "WARNING: --plain") || !strings.Contains(string(j), `value="warn"`) {
		t.Errorf("JUnit hides --plain:\n%s", j)
	}
	var doc struct {
		Verdict  string
		ExitCode int
		Warnings []string
		Checks   []struct{ ID, Verdict string }
	}
	data, _ := os.ReadFile(reportJSON)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Verdict != "warn" || doc.ExitCode != 0 || len(doc.Warnings) == 0 {
		t.Errorf("JSON hides --plain: %s", data)
	}
}

func TestJSONOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runCLI(t, "render", "-o", "json", "--output-dir", dir)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var doc struct {
		Changed  *bool
		ExitCode int
		Facts    map[string]string
		Phases   []struct{ Name, Verdict string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, r.stdout)
	}
	if doc.Changed == nil || *doc.Changed || doc.Facts["fluxVersion"] != "v2.9.5" || len(doc.Phases) != 1 || doc.Phases[0].Verdict != "pass" {
		t.Errorf("unexpected summary: %s", r.stdout)
	}
	if data, err := os.ReadFile(filepath.Join(dir, "gotk-components.yaml")); err != nil || !bytes.Contains(data, []byte("kind: Deployment")) {
		t.Errorf("--output-dir did not get the manifests: %v", err)
	}
	// An input error is a JSON document too, for Ansible.
	r = runCLI(t, "render", "-o", "json", "--output-dir", dir, "--flux-version", "v0.1.0")
	if r.code != 2 || !strings.Contains(r.stdout, `"error": "Flux v0.1.0 is not embedded`) || !strings.Contains(r.stdout, `"exitCode": 2`) {
		t.Errorf("input error not reported as JSON (exit %d): %s", r.code, r.stdout)
	}
}

func TestWritePlan(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	writePlan(&b, []verify.ObjectChange{
		{Object: "Namespace/flux-system", Action: "unchanged"},
		{Object: "Deployment/flux-system/kustomize-controller", Action: "configured", Restarts: true, TakenOverFrom: []string{"kubectl-client-side-apply"}},
		{Object: "Deployment/flux-system/image-reflector-controller", Action: "created"},
		{Object: "Deployment/flux-system/image-automation-controller", Action: "deleted"},
	}, true)
	want := `plan (dry run, nothing applied): 4 object(s): 1 created, 1 configured, 1 deleted, 1 unchanged
  configured Deployment/flux-system/kustomize-controller  (pod template changes: restarts)  (takes over from kubectl-client-side-apply)
  created    Deployment/flux-system/image-reflector-controller
  deleted    Deployment/flux-system/image-automation-controller
restarts: Deployment/flux-system/kustomize-controller
`
	if b.String() != want {
		t.Errorf("plan:\n%s\nwant:\n%s", b.String(), want)
	}
}
