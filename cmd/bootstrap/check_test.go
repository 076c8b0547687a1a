package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bootstrap check: exit 0 on the clean fixture, 1 on a defect, 2 on input
// errors, 3 when a path cannot be checked; --sarif names file and line.
func TestCheckCLI(t *testing.T) {
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
		{"no environment", []string{"--repo", clean}, 2, "pass --env NAME"},
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
			r := runCLI(t, append([]string{"check", "-o", "json"}, tc.args...)...)
			var doc struct{ ExitCode int }
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
			}
			if r.code != tc.code || doc.ExitCode != tc.code || !strings.Contains(r.stdout, tc.want) {
				t.Fatalf("exit %d (report %d); want %d and %q in:\n%s%s", r.code, doc.ExitCode, tc.code, tc.want, r.stdout, r.stderr)
			}
		})
	}
	b, err := os.ReadFile(sarif)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.Contains(s, `"ruleId": "undefined"`) || !strings.Contains(s, `"uri": "apps/web.yaml"`) || !strings.Contains(s, `"startLine": 8`) {
		t.Fatalf("sarif:\n%s", s)
	}
}

// The text report of check: by default a line per gate and the findings
// grouped; --verbose every check with its evidence; -q as before; -q and
// --verbose together are a usage error.
func TestCheckTextReport(t *testing.T) {
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
