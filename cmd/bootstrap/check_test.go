package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// bootstrap check: exit 0 on the clean fixture, 1 on a defect, 2 on input
// errors, 3 when a path cannot be checked; --sarif names file and line.
func TestCheckCLI(t *testing.T) {
	t.Parallel()
	const clean = "../../testdata/check/clean"
	mutated := func(file, old, new string) string {
		dst := t.TempDir()
		if err := os.CopyFS(dst, os.DirFS(clean)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dst, file)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	undefined := mutated("apps/web.yaml", "${environment}", "${enviroment}")
	remote := mutated("infrastructure/kustomization.yaml", "- crd-like.yaml", "- https://github.com/example/remote//base?ref=v1")
	// The root directory not building is its [build] failure (exit 1).
	rootBroken := mutated("clusters/dev/kustomization.yaml", "  - sync.yaml\n", "  - sync.yaml\n  - not-there.yaml\n")
	const layouts = "../../testdata/layouts/"
	sarif := filepath.Join(t.TempDir(), "check.sarif")
	// A repository that commits no root: the command line declares it.
	rootless := t.TempDir()
	if err := os.MkdirAll(filepath.Join(rootless, "clusters", "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootless, "clusters", "dev", "app.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"clean", []string{"--repo", clean, "--env", "dev"}, 0, `"verdict": "pass"`},
		{"undefined variable", []string{"--repo", undefined, "--env", "dev", "--sarif", sarif}, 1, `apps/web.yaml:8: [undefined] ${enviroment} in ConfigMap/web/web is not defined`},
		// Issue 45 item 1 (exit 3, the path not built, before): a hole,
		// not a wall — the remote base is left out, one warning, and the
		// rest of that path is checked.
		{"remote base", []string{"--repo", remote, "--env", "dev"}, 0, `[unread] resources entry \"https://github.com/example/remote//base?ref=v1\" is a remote base`},
		// Issue 45: no --env/--path checks every root the repository declares.
		{"no environment: every cluster", []string{"--repo", clean}, 0, `"id": "clusters.prod:check.render"`},
		{"unknown environment", []string{"--repo", clean, "--env", "staging"}, 2, "clusters/staging: no such directory"},
		{"a root declared with its source kind", []string{"--repo", rootless, "--env", "dev", "--source-kind", "OCIRepository", "--source-url", "oci://registry.example.invalid/fleet", "--source-ref", "latest"}, 0, "declared on the command line"},
		{"a root declared where one is rendered", []string{"--repo", clean, "--env", "dev", "--source-url", "https://git.example.invalid/x.git"}, 2, "renders it (Kustomization flux-system/flux-system): drop --source-kind, --source-url and --source-ref"},
		// Issue 38: one Kustomization that does not build is its [build]
		// failure; the others are checked (the undefined variable of
		// another one is reported too): exit 1, not 2.
		{"a Component under resources: beside another defect", []string{"--repo", layouts + "broken-build", "--path", "clusters/prod"}, 1, `[build] Kustomization flux-system/apps: kustomize build of spec.path \"./apps\" failed`},
		{"the other defect of that repository", []string{"--repo", layouts + "broken-build", "--path", "clusters/prod"}, 1, `[undefined] ${ingress_class}`},
		// Issue 45 item 2 (exit 2 before): the repository's defect, exit 1,
		// and what the root renders is still checked.
		{"the root directory does not build", []string{"--repo", rootBroken, "--env", "dev"}, 1, `[build] the root directory clusters/dev does not build: kustomize build clusters/dev: accumulating resources: accumulation err='accumulating resources from 'not-there.yaml'`},
		{"flux bootstrap's placeholder", []string{"--repo", layouts + "placeholder", "--env", "staging"}, 0, "written by flux bootstrap into clusters/staging/flux-system/gotk-sync.yaml"},
		{"a tenant path", []string{"--repo", layouts + "placeholder", "--path", "tenants/team-a"}, 0, "no root here: tenants/team-a"},
		{"a root declared where a FluxInstance declares it", []string{"--repo", "../../testdata/layouts/operator", "--path", "kubernetes/flux/cluster", "--source-url", "https://git.example.invalid/x.git"}, 2, "already declares it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, append([]string{"check", "-o", "json"}, tc.args...)...)
			var doc struct{ ExitCode int }
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
			}
			if r.code != tc.code || doc.ExitCode != tc.code || !strings.Contains(r.stdout, tc.want) {
				t.Fatalf("exit %d (report %d); want %d and %q in:\n%s%s", r.code, doc.ExitCode, tc.code, tc.want, r.stdout, r.stderr)
			}
			if !slices.Contains(tc.args, "--sarif") {
				return
			}
			b, err := os.ReadFile(sarif)
			if err != nil {
				t.Fatal(err)
			}
			if s := string(b); !strings.Contains(s, `"ruleId": "undefined"`) || !strings.Contains(s, `"uri": "apps/web.yaml"`) || !strings.Contains(s, `"startLine": 8`) {
				t.Fatalf("sarif:\n%s", s)
			}
		})
	}
}

// The text report of check: by default a line per gate and the findings
// grouped; --verbose every check with its evidence; -q as before; -q and
// --verbose together are a usage error.
func TestCheckTextReport(t *testing.T) {
	t.Parallel()
	const clean = "../../testdata/check/clean"
	for _, tc := range []struct {
		name      string
		args      []string
		code      int
		want, not []string
	}{
		{"default", nil, 0, []string{"PASS  static/before  check.substitution: ", "check: PASS"}, []string{"PASS  static/before  check.substitution/", "        Kustomization flux-system/"}},
		{"verbose", []string{"--verbose"}, 0, []string{"PASS  static/before  check.substitution/", "        Kustomization flux-system/"}, nil},
		{"quiet", []string{"-q"}, 0, []string{"check: PASS"}, []string{"PASS  static/before"}},
		{"quiet and verbose", []string{"-q", "--verbose"}, 2, []string{"--quiet and --verbose are exclusive"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, append([]string{"check", "--repo", clean, "--env", "dev"}, tc.args...)...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", r.code, tc.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(r.stderr, w) {
					t.Errorf("stderr has %q:\n%s", w, r.stderr)
				}
			}
		})
	}
}

// Issue 45 item 8: without --env and --path, check finds every cluster root
// the repository declares, in each form, checks each by itself into one
// report (a section per cluster: its path in its checks' IDs) and exits with
// the worst code: 1 over 3 over 0; 2 only for what the caller gave.
func TestCheckEveryCluster(t *testing.T) {
	t.Parallel()
	const multi = "../../testdata/layouts/multi"
	// copyEdit copies multi and replaces old by new in each file.
	copyEdit := func(edits ...[3]string) string {
		dst := t.TempDir()
		if err := os.CopyFS(dst, os.DirFS(multi)); err != nil {
			t.Fatal(err)
		}
		for _, e := range edits {
			p := filepath.Join(dst, e[0])
			b, _ := os.ReadFile(p)
			if e[1] != "" && !strings.Contains(string(b), e[1]) {
				t.Fatalf("%s has no %q", e[0], e[1])
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(strings.Replace(string(b), e[1], e[2], 1)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dst
	}
	undefinedDev := [3]string{"clusters/dev/apps.yaml", "greeting: hello dev", "greting: hello dev"}
	// A Kustomization that substitutes, whose spec.path holds a variable:
	// not built offline, a required skip. (A remote base is a hole since
	// issue 45: left out, the rest built.)
	remoteDev := [3]string{"clusters/dev/remote.yaml", "", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: remote\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./remote-${greeting}\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  postBuild:\n    substitute:\n      greeting: hello\n"}
	undefinedProd := [3]string{"clusters/prod/apps.yaml", "greeting: hello prod", "greting: hello prod"}
	remoteDir := [3]string{"remote/kustomization.yaml", "", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - https://github.com/example/remote//base?ref=v1\n"}
	brokenProd := [3]string{"clusters/prod/kustomization.yaml", "", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - flux-system/gotk-sync.yaml\n  - apps.yaml\n  - not-there.yaml\n"}
	handApplied := t.TempDir()
	for f, c := range map[string]string{
		"bootstrap/root.yaml":   "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/lab\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
		"clusters/lab/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: default\n",
	} {
		if err := os.MkdirAll(filepath.Join(handApplied, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(handApplied, f), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	noRoot := t.TempDir()
	if err := os.MkdirAll(filepath.Join(noRoot, "clusters", "dev"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		repo string
		args []string
		code int
		// want are texts of the JSON report; verdicts the verdict of check IDs.
		want     []string
		verdicts map[string]string
	}{
		{name: "three clusters, three forms, as committed", repo: multi, code: 0,
			want: []string{"3 cluster root(s) found", "clusters/dev (root Kustomization at clusters/dev/sync.yaml:8)",
				"clusters/prod (flux bootstrap gotk-sync.yaml at clusters/prod/flux-system/gotk-sync.yaml:23)",
				"kubernetes/edge (FluxInstance spec.sync.path at bootstrap/flux-instance.yaml:16)",
				"note: clusters/base: no root declares it", `"clusters": "clusters/dev, clusters/prod, kubernetes/edge"`},
			verdicts: map[string]string{"check.clusters": "pass", "clusters.dev:check.render": "pass", "clusters.prod:check.graph": "pass", "kubernetes.edge:check.flux-release": "pass"}},
		{name: "a defect in one cluster: exit 1, the others checked", repo: copyEdit(undefinedDev), code: 1,
			want:     []string{"${greeting} in ConfigMap/default/greeting is not defined"},
			verdicts: map[string]string{"clusters.dev:check.substitution/flux-system/apps": "fail", "clusters.prod:check.substitution/flux-system/apps": "pass", "kubernetes.edge:check.render": "pass"}},
		{name: "a cluster incomplete: exit 3", repo: copyEdit(remoteDev, remoteDir), code: 3,
			verdicts: map[string]string{"clusters.dev:check.substitution/flux-system/remote": "skip", "clusters.prod:check.render": "pass"}},
		{name: "one incomplete, one failing: the worst, 1", repo: copyEdit(remoteDev, remoteDir, undefinedProd), code: 1,
			verdicts: map[string]string{"clusters.dev:check.substitution/flux-system/remote": "skip", "clusters.prod:check.substitution/flux-system/apps": "fail"}},
		{name: "a root directory that does not build is that cluster's failure", repo: copyEdit(brokenProd), code: 1,
			// Issue 45 item 2: the root's [build] failure, and everything
			// below it still checked.
			want:     []string{"not-there.yaml", "[build]"},
			verdicts: map[string]string{"clusters.prod:check.render": "fail", "clusters.prod:check.graph": "pass", "clusters.prod:check.substitution/flux-system/apps": "pass", "clusters.dev:check.render": "pass", "kubernetes.edge:check.render": "pass"}},
		{name: "a root applied by hand", repo: handApplied, code: 0,
			want:     []string{"clusters/lab (hand-applied root Kustomization at bootstrap/root.yaml:8; its directory checked as a path whose root is made outside it)"},
			verdicts: map[string]string{"clusters.lab:check.graph": "pass"}},
		{name: "--env: that one cluster, as before", repo: multi, args: []string{"--env", "prod"}, code: 0,
			verdicts: map[string]string{"check.render": "pass"}},
		{name: "no root: exit 2, what was looked for", repo: noRoot, code: 2,
			want: []string{"no cluster root found in", "pass --path DIR", "looked for a Kustomization flux-system/flux-system whose spec.path", "FluxInstance spec.sync.path", "clusters/dev: no root declares it"}},
		{name: "a root declared on the command line needs its path", repo: multi, args: []string{"--source-url", "https://git.example.invalid/x.git"}, code: 2,
			want: []string{"declare the root of one cluster: pass its --path"}},
		{name: "a policy file that does not load is the run's input error", repo: copyEdit([3]string{".bootstrap.yaml", "", "nonsense: [\n"}), code: 2,
			want: []string{".bootstrap.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			junit := filepath.Join(t.TempDir(), "check.xml")
			sarif := filepath.Join(t.TempDir(), "check.sarif")
			r := runCLI(t, append([]string{"check", "-o", "json", "--repo", tc.repo, "--junit", junit, "--sarif", sarif}, tc.args...)...)
			var doc struct {
				ExitCode int
				Checks   []struct{ ID, Verdict string }
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
			}
			if r.code != tc.code || doc.ExitCode != tc.code {
				t.Fatalf("exit %d (report %d), want %d:\n%s%s", r.code, doc.ExitCode, tc.code, r.stdout, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("the report lacks %q:\n%s", w, r.stdout)
				}
			}
			got := map[string]string{}
			for _, c := range doc.Checks {
				got[c.ID] = c.Verdict
			}
			for id, v := range tc.verdicts {
				if got[id] != v {
					t.Errorf("%s: %q, want %q (checks: %v)", id, got[id], v, got)
				}
			}
			// JUnit stays valid, each case named with its cluster.
			b, err := os.ReadFile(junit)
			var suites struct {
				Suites []struct {
					Cases []struct {
						Name string `xml:"name,attr"`
					} `xml:"testcase"`
				} `xml:"testsuite"`
			}
			if err != nil || xml.Unmarshal(b, &suites) != nil {
				t.Fatalf("JUnit %s: %v\n%s", junit, err, b)
			}
			for id := range tc.verdicts {
				found := false
				for _, s := range suites.Suites {
					for _, c := range s.Cases {
						found = found || c.Name == id
					}
				}
				if !found {
					t.Errorf("JUnit has no case %s:\n%s", id, b)
				}
			}
			// SARIF: one run; a finding names its cluster's gate.
			if tc.code == 1 && len(tc.want) == 1 {
				b, err := os.ReadFile(sarif)
				if err != nil {
					t.Fatal(err)
				}
				var log sarifDoc
				if err := json.Unmarshal(b, &log); err != nil || len(log.Runs) != 1 || !strings.Contains(string(b), `"gate": "clusters.dev:check.substitution/flux-system/apps"`) {
					t.Errorf("SARIF (%v):\n%s", err, b)
				}
			}
		})
	}
}

// The text report of several clusters: check.clusters first, then each
// cluster's gates, its path in their IDs.
func TestCheckEveryClusterText(t *testing.T) {
	t.Parallel()
	r := runCLI(t, "check", "--repo", "../../testdata/layouts/multi")
	if r.code != 0 {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
	order := []string{"PASS  static/before  check.clusters: 3 cluster root(s) found", "PASS  static/before  clusters.dev:check.render: clusters/dev builds",
		"PASS  static/before  clusters.prod:check.render: clusters/prod builds", "PASS  static/before  kubernetes.edge:check.graph: root flux-system/flux-system (declared by the FluxInstance spec.sync at bootstrap/flux-instance.yaml:16",
		"check: PASS (28 pass"}
	at := 0
	for _, w := range order {
		i := strings.Index(r.stderr[at:], w)
		if i < 0 {
			t.Fatalf("no %q after offset %d:\n%s", w, at, r.stderr)
		}
		at += i
	}
}

// check --path of the Taskfile layout, without --root, checks the one
// self-applying root Kustomization the path renders (flux-system/cluster)
// and says so in the facts; --root or --namespace given keeps the name
// given (an input error naming the candidate).
func TestCheckPathAdoptsSelfApplyingRoot(t *testing.T) {
	t.Parallel()
	const repo = "../../testdata/layouts/taskfile"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, `"root": "flux-system/cluster (no --root given and no flux-system/flux-system here: the one self-applying root Kustomization kubernetes/flux renders`},
		{[]string{"--root", "flux-system"}, "pass --namespace flux-system --root cluster"},
		{[]string{"--namespace", "flux-system"}, "pass --namespace flux-system --root cluster"},
	} {
		r := runCLI(t, append([]string{"check", "--repo", repo, "--path", "kubernetes/flux", "-o", "json"}, tc.args...)...)
		if !strings.Contains(r.stdout+r.stderr, tc.want) {
			t.Errorf("%v: exit %d, no %q in:\n%s\n%s", tc.args, r.code, tc.want, r.stdout, r.stderr)
		}
		if tc.args != nil && r.code != 2 {
			t.Errorf("%v: exit %d, want 2", tc.args, r.code)
		}
	}
}
