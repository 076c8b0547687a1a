package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// sharedBad is a bad value for every flag more than one command takes.
var sharedBad = map[string]string{
	"namespace":         "Bad_NS!",
	"root":              "Root!",
	"secret-name":       "Sops_Age",
	"timeout":           "soon",
	"env":               "../x",
	"path":              "../../etc",
	"compare":           "../x",
	"report-json":       "/nonexistent/dir/r.json",
	"junit":             "/nonexistent/dir/r.xml",
	"source-url":        "file:///etc",
	"source-secret":     "My_Secret",
	"registry":          "ghcr.io/fluxcd:v1",
	"cluster-domain":    "cluster..local",
	"image-pull-secret": "Pull_Secret",
	"toleration-keys":   "bad key!",
	"retries":           "-1",
	"fail-after":        "-1s",
	"graph":             "/nonexistent/dir/g.md",
	"serve-for":         "0s",
	"cutover-timeout":   "0s",
	"log-level":         "loud",
	"flux-version":      "v9.9.9",
	"components":        "nope-controller",
	"components-extra":  "nope-controller",
}

// countingKubeconfig is a kubeconfig naming an API server that counts
// every request it gets (and answers none usefully).
func countingKubeconfig(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return kc, &n
}

// TestSharedFlagsSameVerdict: every command × every shared flag it takes,
// with a bad value: exit 2 naming the flag, before any file is read (--repo
// names a directory that does not exist: reading it would be another
// error) and before any request (the kubeconfig's server counts them).
func TestSharedFlagsSameVerdict(t *testing.T) {
	t.Parallel()
	kc, requests := countingKubeconfig(t)
	missingRepo := filepath.Join(t.TempDir(), "no-such-repo")
	root := newRootCommand(genericiooptions.NewTestIOStreamsDiscard(), func(string) string { return "" })
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		if c.Runnable() && !c.Hidden && c.Name() != "docgen" {
			flags := pflag.NewFlagSet("", pflag.ContinueOnError)
			flags.AddFlagSet(c.LocalFlags())
			flags.AddFlagSet(c.InheritedFlags())
			flags.VisitAll(func(f *pflag.Flag) {
				bad, ok := sharedBad[f.Name]
				if !ok {
					return
				}
				checked++
				args := append([]string{}, path...)
				if flags.Lookup("repo") != nil {
					args = append(args, "--repo", missingRepo)
				}
				args = append(args, "--"+f.Name+"="+bad)
				before := requests.Load()
				r := cli(t, "", map[string]string{"KUBECONFIG": kc}, args...)
				switch {
				case r.code != 2 || !strings.Contains(r.stderr, "--"+f.Name):
					t.Errorf("bootstrap %s: exit %d, want 2 naming --%s:\n%s", strings.Join(args, " "), r.code, f.Name, r.stderr)
				case strings.Contains(r.stderr, missingRepo):
					t.Errorf("bootstrap %s: read --repo before refusing --%s:\n%s", strings.Join(args, " "), f.Name, r.stderr)
				case requests.Load() != before:
					t.Errorf("bootstrap %s: %d request(s) before refusing --%s", strings.Join(args, " "), requests.Load()-before, f.Name)
				}
			})
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if checked < 60 {
		t.Fatalf("only %d command × flag pairs checked: the walk missed commands", checked)
	}
}

// TestConfigAndEnvironmentThroughTheTypes: a value from --config or the
// environment goes through the flag's own type; a wrong shape or value
// is exit 2 naming the key and the file (or the variable).
func TestConfigAndEnvironmentThroughTheTypes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	list := write("list.yaml", "env: dev\ntimeout: [1, 2]\n")
	notDuration := write("soon.yaml", "env: dev\ntimeout: soon\n")
	badNS := write("ns.yaml", "env: dev\nnamespace: Bad_NS!\n")
	mapped := write("map.yaml", "env: dev\nroot: {name: x}\n")
	nested := write("nested.yaml", "env: dev\ncomponents-extra: [[a]]\n")
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"a list for a duration", nil, []string{"--config", list}, []string{list, "timeout: a list", "--timeout takes one duration"}},
		{"not a duration", nil, []string{"--config", notDuration}, []string{list[:len(list)-len("list.yaml")] + "soon.yaml", "timeout", "not a duration"}},
		{"bad namespace", nil, []string{"--config", badNS}, []string{badNS, "namespace", `"Bad_NS!"`}},
		{"a map", nil, []string{"--config", mapped}, []string{mapped, "root: not a plain value"}},
		{"a nested list", nil, []string{"--config", nested}, []string{nested, "components-extra: item 1"}},
		{"environment", map[string]string{"BOOTSTRAP_TIMEOUT": "soon"}, []string{"--env", "dev"}, []string{"BOOTSTRAP_TIMEOUT", "--timeout", "not a duration"}},
		{"environment namespace", map[string]string{"FLUX_NAMESPACE": "Bad_NS!"}, []string{"--env", "dev"}, []string{"FLUX_NAMESPACE", "--namespace", `"Bad_NS!"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := cli(t, "", tt.env, append([]string{"up", "--repo", "../../testdata/homelab", "--dry-run"}, tt.args...)...)
			if r.code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

// TestFlagsWithoutEffect: a flag given where it would change nothing is
// exit 2 naming what it needs, before any read; from the environment it
// is ambient and not refused.
func TestFlagsWithoutEffect(t *testing.T) {
	t.Parallel()
	const repo = "../../testdata/homelab"
	up := []string{"up", "--repo", repo, "--env", "dev", "--dry-run"}
	sync := []string{"sync", "--repo", repo, "--env", "dev", "--dry-run"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"up --cutover-when-ready alone", append(up, "--cutover-when-ready"), "--cutover-when-ready needs a temporary source to cut over from: add --serve"},
		{"sync --cutover-when-ready alone", append(sync, "--cutover-when-ready"), "--source-url"},
		{"--cutover-timeout without --cutover-when-ready", append(sync, "--cutover-timeout", "5m"), "--cutover-timeout needs --cutover-when-ready"},
		{"--serve-for without --serve", append(up, "--serve-for", "1h"), "--serve-for needs --serve"},
		{"--graph with --converge=false", append(sync, "--converge=false", "--graph", filepath.Join(t.TempDir(), "g.md")), "--graph is the converge phase's"},
		{"--nudge with --converge=false", append(up, "--converge=false", "--nudge=false"), "--nudge is the converge phase's"},
		{"cutover --retries with --converge=false", []string{"cutover", "--converge=false", "--retries", "3"}, "--retries is the converge phase's"},
		{"--compare with --check=false", append(sync, "--check=false", "--compare", "clusters/prod"), "need it: drop --check=false"},
		{"up --rotate without a key", append(up, "--rotate"), "--rotate and --secret-name are phase age-key's and need a key"},
		{"status --secret-name without an environment", []string{"status", "--secret-name", "age"}, "--secret-name needs --env or --path"},
		{"render --plain with --overlays", []string{"render", "--plain", "--overlays", fixtures + "noop"}, "--overlays has no effect with --plain"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, tt.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("exit %d, want 2 saying %q:\n%s", r.code, tt.want, r.stderr)
			}
		})
	}
	// The environment is ambient: BOOTSTRAP_SERVE_FOR exported for every
	// command does not refuse a sync without --serve (it goes on to the
	// cluster: no kubeconfig, exit 2 naming it).
	r := cli(t, "", map[string]string{"BOOTSTRAP_SERVE_FOR": "1h"}, sync...)
	if strings.Contains(r.stderr, "--serve-for needs") {
		t.Errorf("an ambient BOOTSTRAP_SERVE_FOR was refused:\n%s", r.stderr)
	}
}

// TestStatusWatchUnreachable: status --watch against an API server that
// refuses connections ends within seconds, as plain status does (exit 3,
// cluster.reachable named), instead of waiting for watches for ever.
func TestStatusWatchUnreachable(t *testing.T) {
	t.Parallel()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"KUBECONFIG": kc, "HOME": t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var o, e strings.Builder
	start := time.Now()
	code := run(ctx, []string{"status", "--watch", "-o", "json", "--request-timeout", "2s"},
		genericiooptions.IOStreams{In: strings.NewReader(""), Out: &o, ErrOut: &e}, func(k string) string { return env[k] })
	if took := time.Since(start); ctx.Err() != nil || took > 30*time.Second {
		t.Fatalf("status --watch took %s (still waiting when the test gave up: %v)", took, ctx.Err())
	}
	var doc cliDoc
	if err := json.Unmarshal([]byte(o.String()), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s\n%s", err, o.String(), e.String())
	}
	if code != 3 || doc.ExitCode != 3 {
		t.Fatalf("exit %d (report %d), want 3:\n%s", code, doc.ExitCode, o.String())
	}
	if c := doc.check("cluster.reachable"); !strings.Contains(c.Message, "127.0.0.1:1") {
		t.Errorf("cluster.reachable: %+v", c)
	}
}

// TestStatusExplicitRoot: a --root given is kept even when it names the
// default, flux-system/flux-system, next to another --namespace; without
// --root the root is named after --namespace.
func TestStatusExplicitRoot(t *testing.T) {
	t.Parallel()
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		root string
	}{
		{[]string{"--namespace", "flux", "--root", "flux-system/flux-system"}, "flux-system/flux-system"},
		{[]string{"--namespace", "flux"}, "flux/flux"},
		{nil, "flux-system/flux-system"},
		{[]string{"--namespace", "flux", "--root", "apps"}, "flux/apps"},
	} {
		r := runCLI(t, append([]string{"status", "-o", "json", "--kubeconfig", kc, "--request-timeout", "2s"}, tc.args...)...)
		var doc struct{ Facts map[string]string }
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("%v: stdout is not JSON: %v\n%s", tc.args, err, r.stderr)
		}
		if doc.Facts["root"] != tc.root {
			t.Errorf("status %v: root %q, want %q", tc.args, doc.Facts["root"], tc.root)
		}
	}
}
