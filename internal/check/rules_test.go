package check

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// writeRepo writes files (relative path: content) into a new directory.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for rel, c := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// ksDoc is a Flux Kustomization of flux-system reading the GitRepository
// flux-system; extra is appended to its spec.
func ksDoc(name, path string, wait bool, extra string, deps ...string) string {
	s := fmt.Sprintf("---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: %s\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./%s\n  prune: true\n  wait: %v\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n%s", name, path, wait, extra)
	if len(deps) > 0 {
		s += "  dependsOn:\n"
		for _, d := range deps {
			s += "    - name: " + d + "\n"
		}
	}
	return s
}

const gitSource = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: https://git.example.invalid/r.git\n  ref:\n    branch: main\n"

// TestRootWait: [root-wait] only where the root's own health check waits
// for a Kustomization that waits for the root. kustomize-controller v1.9.5
// internal/controller/kustomization_controller.go checkHealth: under
// wait: true it health-checks every object of the apply's change set
// (skipped ones left out) but drops the Kustomization itself ("Guard
// against deadlock (waiting on itself)"), so a root applying its own
// Kustomization (flux bootstrap's gotk-sync.yaml) does not wait for
// itself; without wait, only spec.healthChecks (namespace as given,
// inventory.ReferenceToObjMetadataSet). checkDependencies keeps a
// dependent DependencyNotReady until its dependency is Ready — which the
// root is not while its health check waits.
func TestRootWait(t *testing.T) {
	t.Parallel()
	rootDoc := func(wait bool, extra string) string {
		return gitSource + ksDoc("flux-system", "clusters/dev", wait, extra)
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string // rootWaiters: direct, then "through: " ones
	}{
		{"wait: true, nothing depends on the root", map[string]string{
			"clusters/dev/root.yaml": rootDoc(true, ""),
			"clusters/dev/ks.yaml":   ksDoc("apps", "apps", false, ""),
			"apps/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n"}, nil},
		{"wait: false, a child depends on the root", map[string]string{
			"clusters/dev/root.yaml": rootDoc(false, ""),
			"clusters/dev/ks.yaml":   ksDoc("apps", "apps", false, "", "flux-system"),
			"apps/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n"}, nil},
		{"wait: true, a child it applies depends on it", map[string]string{
			"clusters/dev/root.yaml": rootDoc(true, ""),
			"clusters/dev/ks.yaml":   ksDoc("apps", "apps", false, "", "flux-system"),
			"apps/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n"}, []string{"flux-system/apps"}},
		{"wait: true, a child depends on it through another", map[string]string{
			"clusters/dev/root.yaml": rootDoc(true, ""),
			"clusters/dev/ks.yaml":   ksDoc("infra", "infra", false, "", "flux-system") + ksDoc("apps", "apps", false, "", "infra"),
			"infra/cm.yaml":          "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: i\n  namespace: default\n",
			"apps/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n"}, []string{"flux-system/infra", "through: flux-system/apps"}},
		// A grandchild is checked only through a child that itself waits.
		{"a grandchild depends on the root, its parent does not wait", map[string]string{
			"clusters/dev/root.yaml": rootDoc(true, ""),
			"clusters/dev/ks.yaml":   ksDoc("apps", "apps", false, ""),
			"apps/ks.yaml":           ksDoc("web", "web", false, "", "flux-system"),
			"web/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\n  namespace: default\n"}, nil},
		{"a grandchild depends on the root, its parent waits", map[string]string{
			"clusters/dev/root.yaml": rootDoc(true, ""),
			"clusters/dev/ks.yaml":   ksDoc("apps", "apps", true, ""),
			"apps/ks.yaml":           ksDoc("web", "web", false, "", "flux-system"),
			"web/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\n  namespace: default\n"}, []string{"flux-system/web"}},
		{"a grandchild depends on the root, its parent health-checks it", map[string]string{
			"clusters/dev/root.yaml": rootDoc(true, ""),
			"clusters/dev/ks.yaml":   ksDoc("apps", "apps", false, "  healthChecks:\n    - apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      name: web\n      namespace: flux-system\n"),
			"apps/ks.yaml":           ksDoc("web", "web", false, "", "flux-system"),
			"web/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\n  namespace: default\n"}, []string{"flux-system/web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			env, err := fluxrepo.Load(fluxrepo.Options{Repo: writeRepo(t, tc.files), Path: "clusters/dev"})
			if err != nil {
				t.Fatal(err)
			}
			direct, through := rootWaiters(env, fluxgraph.FromEnv(env))
			got := direct
			for _, id := range through {
				got = append(got, "through: "+id)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("rootWaiters = %v, want %v", got, tc.want)
			}
		})
	}
	// What the user sees, on the shared fixture: infra depends on the root,
	// which applies it.
	rep := run(t, fixture(t, mutation{"clusters/dev/sync.yaml", "wait: false", "wait: true"}))
	if c := checkOf(rep, "check.graph"); c.Verdict != verify.Fail || !strings.Contains(text(c), "clusters/dev/sync.yaml:10: [root-wait] the root Kustomization flux-system/flux-system has wait: true: it health-checks Kustomization flux-system/infra, which depend(s) on it (and flux-system/apps, flux-system/docs, through dependsOn) — a deadlock") ||
		!strings.Contains(text(c), "or drop the dependsOn on flux-system/flux-system from flux-system/infra") {
		t.Fatalf("check.graph:\n%s", dump(rep))
	}
	// Nothing depends on the root (infra's dependsOn dropped; the race that
	// opens is another detector's): wait: true is no finding.
	rep = run(t, fixture(t, mutation{"clusters/dev/sync.yaml", "wait: false", "wait: true"},
		mutation{"clusters/base/infrastructure.yaml", "  dependsOn:\n    - name: flux-system\n", ""}), RaceDep)
	if c := checkOf(rep, "check.graph"); c.Verdict != verify.Pass || session.ReportCode(rep) != session.ExitOK {
		t.Fatalf("a wait: true root nothing depends on: exit %d\n%s", session.ReportCode(rep), dump(rep))
	}
}

// appsVars is a ConfigMap of flux-system that Kustomization apps applies
// (apps/web.yaml) and substitutes from.
const appsVars = "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: apps-vars\n  namespace: flux-system\ndata:\n  tier: web\n"

// TestSubstituteFromItsOwnObject: a Kustomization substituting from a
// ConfigMap only it applies. fluxcd/pkg/kustomize v1.35.6 (kustomize-
// controller v1.9.5's) SubstituteVariables calls LoadVariables before it
// substitutes the first object, and LoadVariables returns "substitute from
// 'ConfigMap/<name>' error: <NotFound>" unless the reference is optional
// (kustomize_varsub.go); kustomize-controller's build fails the
// Kustomization with it ("post build failed for …", kustomization_
// controller.go build) before any apply: on a fresh cluster the object is
// never created. Optional, the first reconcile renders without it and the
// next one substitutes it: one reconcile late, an advisory.
func TestSubstituteFromItsOwnObject(t *testing.T) {
	t.Parallel()
	ref := func(optional string) mutation {
		return mutation{"clusters/base/apps.yaml", "      - kind: Secret\n        name: app-secrets\n", "      - kind: Secret\n        name: app-secrets\n      - kind: ConfigMap\n        name: apps-vars\n" + optional}
	}
	own := mutation{"apps/web.yaml", "", appsVars}
	for _, tc := range []struct {
		name    string
		ms      []mutation
		verdict verify.Verdict
		want    string
	}{
		{"not optional: cannot come up", []mutation{own, ref("")}, verify.Fail,
			`clusters/base/apps.yaml:1: [race] Kustomization flux-system/apps substitutes from ConfigMap/flux-system/apps-vars (apps/web.yaml:11), which only it applies and nothing else creates: it cannot come up on a fresh cluster — kustomize-controller loads substituteFrom before it applies anything and fails the build (substitute from 'ConfigMap/apps-vars' error: configmaps "apps-vars" not found), so ConfigMap/flux-system/apps-vars is never created — fix: mark it optional: true in spec.postBuild.substituteFrom of Kustomization flux-system/apps`},
		{"optional: one reconcile late", []mutation{own, ref("        optional: true\n")}, verify.Warn,
			"[race] Kustomization flux-system/apps substitutes from ConfigMap/flux-system/apps-vars, which it applies itself: a changed knob is substituted one reconcile late"},
		{"declared as made outside the repository: one reconcile late", []mutation{own, ref(""),
			{".bootstrap.yaml", "", "version: 1\nprerequisites:\n  declared:\n    - kind: ConfigMap\n      namespace: flux-system\n      name: apps-vars\n      createdBy: the cluster's bootstrap play\n"}}, verify.Warn,
			"which it applies itself: a changed knob is substituted one reconcile late"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := fixture(t)
			for _, m := range tc.ms {
				if m.file == ".bootstrap.yaml" {
					if err := os.WriteFile(filepath.Join(repo, m.file), []byte(m.new), 0o600); err != nil {
						t.Fatal(err)
					}
					continue
				}
				applyMutation(t, repo, m)
			}
			rep := run(t, repo)
			c := checkOf(rep, "check.race/flux-system/apps")
			if c.Verdict != tc.verdict || !strings.Contains(text(c), tc.want) {
				t.Fatalf("want check.race/flux-system/apps %s containing\n%s\ngot:\n%s", tc.verdict, tc.want, dump(rep))
			}
		})
	}
}

// applyMutation applies m to the repository copy at repo (as fixture does).
func applyMutation(t *testing.T, repo string, m mutation) {
	t.Helper()
	p := filepath.Join(repo, m.file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	if m.old == "" {
		s += m.new
	} else {
		if !strings.Contains(s, m.old) {
			t.Fatalf("%s does not contain %q", m.file, m.old)
		}
		s = strings.Replace(s, m.old, m.new, 1)
	}
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}
