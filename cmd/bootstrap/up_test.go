package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/agekey/agekeytest"
	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

func TestUpInputErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unknown := write("unknown.yaml", "env: dev\nflux-verison: v2.9.5\n")
	notMap := write("list.yaml", "- env\n")
	good := write("good.yaml", "env: nosuchenv\ncomponents-extra: [image-reflector-controller, image-automation-controller]\n")
	huge := write("huge.yaml", "env: dev\n# "+strings.Repeat("x", 1<<20)+"\n")
	tests := []struct {
		name string
		args []string
		code int
		msg  string
	}{
		{"no environment", []string{"up"}, 2, "which environment?"},
		{"unknown config key", []string{"up", "--config", unknown}, 2, `unknown flag "flux-verison"`},
		{"config not a map", []string{"up", "--config", notMap}, 2, "not a YAML map"},
		{"missing config", []string{"up", "--config", filepath.Join(dir, "nope.yaml")}, 2, "nope.yaml"},
		// The one bounded read: a device or a file over 1 MiB is refused, not read.
		{"config is a device", []string{"up", "--config", "/dev/zero"}, 2, "not a regular file"},
		{"config too large", []string{"up", "--config", huge}, 2, "at most 1 MiB"},
		// The config's env is used; the command line's --env wins over it.
		{"config env used", []string{"up", "--repo", dir, "--config", good}, 2, "clusters/nosuchenv"},
		{"flag wins over config", []string{"up", "--repo", dir, "--config", good, "--env", "flagenv"}, 2, "clusters/flagenv"},
		{"source branch without url", []string{"up", "--env", "dev", "--source-branch", "main"}, 2, "need --source-url"},
		{"serve with source-url", []string{"up", "--env", "dev", "--serve", "--source-url", "https://mirror.lan/x.git"}, 2, "exclusive"},
		{"serve address form", []string{"up", "--env", "dev", "--serve=1.2.3.4:99999"}, 2, "port"},
		{"serve-url without serve", []string{"up", "--env", "dev", "--serve-url", "https://git.lan"}, 2, "--serve-url needs --serve"},
		{"serve-url plain http", []string{"up", "--env", "dev", "--serve", "--serve-url", "http://git.lan"}, 2, "https://HOST"},
		{"serve-for zero", []string{"up", "--env", "dev", "--serve", "--serve-for", "0s"}, 2, "--serve-for"},
		{"cutover-timeout zero", []string{"up", "--env", "dev", "--cutover-when-ready", "--cutover-timeout", "0s"}, 2, "--cutover-timeout"},
		{"sync serve with source-url", []string{"sync", "--env", "dev", "--serve", "--source-url", "https://mirror.lan/x.git"}, 2, "exclusive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, append(tt.args, "--dry-run")...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.msg) {
				t.Errorf("exit %d, want %d; stderr should say %q:\n%s", r.code, tt.code, tt.msg, r.stderr)
			}
		})
	}
}

// TestUpReadsTheKeyFirst: a missing age-key file is refused before the
// first request (the kubeconfig names no reachable cluster: a request
// would fail with exit 1, not name the file with exit 2).
func TestUpReadsTheKeyFirst(t *testing.T) {
	t.Parallel()
	repo := "../../testdata/homelab"
	r := runCLI(t, "up", "--repo", repo, "--env", "dev", "--age-key-file", "/nonexistent/age.key")
	if r.code != 2 || !strings.Contains(r.stderr, "/nonexistent/age.key") {
		t.Fatalf("exit %d, want 2 naming the key file:\n%s", r.code, r.stderr)
	}
}

// TestUpForceReachesAgeKey: up's --force reaches the age-key phase, as
// age-key's own does. The fixture's dev environment decrypts with sops-age
// but holds no SOPS file yet: without --force age-key.scope skips (up
// stops there, exit 3); with it the gate warns and the key is installed.
func TestUpForceReachesAgeKey(t *testing.T) {
	t.Parallel()
	key, _, err := agekeytest.NewIdentity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "age.key")
	if err := os.WriteFile(keyFile, []byte(key), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want verify.Verdict
	}{
		{nil, verify.Skip},
		{[]string{"--force"}, verify.Warn},
	} {
		o := upOptions(t, append([]string{"--repo", "../../testdata/homelab", "--env", "dev", "--age-key-file", keyFile}, tc.args...)...)
		run := &pipeline.Run{Report: verify.NewReport("up")}
		plan, err := flow.Assemble(context.Background(), o, run.Report)
		if err != nil {
			t.Fatal(err)
		}
		var scope verify.Verdict
		for _, p := range plan.Phases {
			if p.Name() != agekey.PhaseName {
				continue
			}
			// The age-key phase's before-gates run offline.
			checks, err := p.Before(context.Background(), run)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range checks {
				if c.ID == agekey.GateScope.ID {
					scope = c.Verdict
				}
			}
		}
		if scope != tc.want {
			t.Errorf("up %v: age-key.scope %q, want %q", tc.args, scope, tc.want)
		}
	}
}

// upOptions parses up's command line into the run's options, as up does
// before flow.Assemble.
func upOptions(t *testing.T, args ...string) flow.Options {
	t.Helper()
	a := newApp(genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}, func(string) string { return "" })
	if a.s.Setup != nil {
		t.Fatal(a.s.Setup)
	}
	u := &upFlags{}
	cmd := &cobra.Command{Use: "up"}
	u.add(cmd, a)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	o, err := u.options(a, cmd)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestUpPhaseFlagsReachThePhases: where up runs a phase, the phase's own
// flags reach it — the controllers', age-key's, sync's (--root), static's
// (--compare, --no-compare) and converge's (--retries, --fail-after).
func TestUpPhaseFlagsReachThePhases(t *testing.T) {
	t.Parallel()
	o := upOptions(t, "--repo", "../../testdata/homelab", "--env", "dev", "--timeout", "7m", "--force", "--migrate-crds", "--prune-crds",
		"--age-key-file", "key.txt", "--secret-name", "age", "--rotate", "--root", "main", "--compare", "clusters/prod", "--no-compare",
		"--nudge=false", "--retries", "5", "--fail-after", "0", "--cutover-when-ready", "--cutover-timeout", "9m",
		"--source-url", "https://mirror.lan/homelab/gitops.git")
	c, k, conv := o.Controllers, o.AgeKey, o.Converge
	if !o.Force || o.Timeout != 7*time.Minute || c == nil || !c.MigrateCRDs || !c.PruneCRDs {
		t.Errorf("controllers: force %t, timeout %s, %+v", o.Force, o.Timeout, c)
	}
	if k == nil || k.Input.Flag != "key.txt" || k.SecretName != "age" || !k.Rotate {
		t.Errorf("age-key: %+v", k)
	}
	if o.Env.RootName != "main" || o.Env.Namespace != "flux-system" || o.Static == nil || !o.Static.NoCompare || !slices.Equal(o.Static.Compare, []string{"clusters/prod"}) {
		t.Errorf("sync, static: %+v, %+v", o.Env, o.Static)
	}
	if conv == nil || conv.Nudge || conv.Budget.Retries != 5 || conv.Budget.FailAfter != 0 {
		t.Errorf("converge: %+v", conv)
	}
	if o.Sync == nil || !o.Sync.CutoverWhenReady || o.Sync.CutoverWait != 9*time.Minute {
		t.Errorf("cutover when ready: %+v", o.Sync)
	}
	// Without --root the root is named after the namespace, as before.
	if o := upOptions(t, "--repo", "../../testdata/homelab", "--env", "dev", "--namespace", "flux"); o.Env.RootName != "flux" {
		t.Errorf("--namespace flux: root %q, want flux", o.Env.RootName)
	}
}

// TestUpFindsTheRoot (issue 54): up without --env and --path brings up the
// one cluster root the repository declares, as check finds it — a
// self-applying root of another name adopted as the root, a FluxInstance
// root — and refuses roots of several clusters, naming each --path.
func TestUpFindsTheRoot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		repo           string
		path, ns, name string
		adopt          bool
		extra          []string
	}{
		{repo: "taskfile", path: "kubernetes/flux", ns: "flux-system", name: "cluster", adopt: true},
		{repo: "helmfile", path: "kubernetes/flux/cluster", ns: "flux-system", name: "flux-system", adopt: true},
		// --root names the root: no adoption.
		{repo: "taskfile", path: "kubernetes/flux", ns: "flux-system", name: "main", extra: []string{"--root", "main"}},
		// --path without --root: Load adopts the one self-applying root.
		{repo: "taskfile", path: "kubernetes/flux", ns: "flux-system", name: "flux-system", adopt: true, extra: []string{"--path", "kubernetes/flux"}},
	} {
		o := upOptions(t, append([]string{"--repo", "../../testdata/layouts/" + tc.repo}, tc.extra...)...)
		if e := o.Env; e.Path != tc.path || e.Namespace != tc.ns || e.RootName != tc.name || e.AdoptRoot != tc.adopt {
			t.Errorf("up --repo %s %v: path %q root %s/%s adopt %t, want %q %s/%s %t", tc.repo, tc.extra, e.Path, e.Namespace, e.RootName, e.AdoptRoot, tc.path, tc.ns, tc.name, tc.adopt)
		}
	}
	r := runCLI(t, "up", "--repo", "../../testdata/layouts/multi", "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, "declares 3 cluster roots: pass one of --path clusters/dev, --path clusters/prod, --path kubernetes/edge") {
		t.Errorf("up on three clusters: exit %d, want 2 naming each --path:\n%s", r.code, r.stderr)
	}
	r = runCLI(t, "sync", "--repo", "../../testdata/layouts/multi", "--dry-run")
	if r.code != 2 || !strings.Contains(r.stderr, "pass one of --path clusters/dev") {
		t.Errorf("sync on three clusters: exit %d, want 2 naming each --path:\n%s", r.code, r.stderr)
	}
}
