package check

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/envsubst/parse"

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
		// Without wait, the root's spec.healthChecks are its health check.
		{"wait: false, spec.healthChecks names a child that depends on it", map[string]string{
			"clusters/dev/root.yaml": rootDoc(false, "  healthChecks:\n    - apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      name: apps\n      namespace: flux-system\n"),
			"clusters/dev/ks.yaml":   ksDoc("apps", "apps", false, "", "flux-system"),
			"apps/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n"}, []string{"flux-system/apps"}},
		{"wait: false, spec.healthChecks names a child that does not depend on it", map[string]string{
			"clusters/dev/root.yaml": rootDoc(false, "  healthChecks:\n    - apiVersion: kustomize.toolkit.fluxcd.io/v1\n      kind: Kustomization\n      name: apps\n      namespace: flux-system\n"),
			"clusters/dev/ks.yaml":   ksDoc("apps", "apps", false, "") + ksDoc("web", "web", false, "", "flux-system"),
			"apps/cm.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: default\n",
			"web/cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\n  namespace: default\n"}, nil},
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
			direct, through := fluxgraph.RootWaiters(env, fluxgraph.FromEnv(env))
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
	if c := checkOf(rep, "check.graph"); c.Verdict != verify.Fail || !hasFinding(c, RootWait, "clusters/dev/sync.yaml:10: the root Kustomization flux-system/flux-system has wait: true: it health-checks Kustomization flux-system/infra, which depend(s) on it (and flux-system/apps, flux-system/docs, through dependsOn) — a deadlock") ||
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
		// det: want is in a finding of det ("": in the check's text).
		det  verify.Detector
		want string
	}{
		{"not optional: cannot come up", []mutation{own, ref("")}, verify.Fail,
			RaceDep, `clusters/base/apps.yaml:1: Kustomization flux-system/apps substitutes from ConfigMap/flux-system/apps-vars (apps/web.yaml:11), which only it applies and nothing else creates: it cannot come up on a fresh cluster — kustomize-controller loads substituteFrom before it applies anything and fails the build (substitute from 'ConfigMap/apps-vars' error: configmaps "apps-vars" not found), so ConfigMap/flux-system/apps-vars is never created — fix: mark it optional: true in spec.postBuild.substituteFrom of Kustomization flux-system/apps`},
		// An ExternalSecret apps applies makes the Secret: not before apps
		// applies it, which its build failing never does.
		{"made by an object it applies: cannot come up", []mutation{
			{"apps/web.yaml", "", "---\napiVersion: external-secrets.io/v1\nkind: ExternalSecret\nmetadata:\n  name: apps-secret\n  namespace: flux-system\nspec:\n  secretStoreRef:\n    kind: ClusterSecretStore\n    name: vault\n  target:\n    name: apps-secret\n  data:\n    - secretKey: token\n      remoteRef:\n        key: apps\n"},
			{"clusters/base/apps.yaml", "      - kind: Secret\n        name: app-secrets\n", "      - kind: Secret\n        name: app-secrets\n      - kind: Secret\n        name: apps-secret\n"}}, verify.Fail,
			RaceDep, `substitutes from Secret/flux-system/apps-secret (apps/web.yaml:11), which only it applies (made by ExternalSecret flux-system/apps-secret, which it applies) and nothing else creates: it cannot come up on a fresh cluster — kustomize-controller loads substituteFrom before it applies anything and fails the build (substitute from 'Secret/apps-secret' error: secrets "apps-secret" not found)`},
		{"optional: one reconcile late", []mutation{own, ref("        optional: true\n")}, verify.Warn,
			RaceDep, "Kustomization flux-system/apps substitutes from ConfigMap/flux-system/apps-vars, which it applies itself: a changed knob is substituted one reconcile late"},
		{"declared as made outside the repository: one reconcile late", []mutation{own, ref(""),
			{".bootstrap.yaml", "", "version: 1\nprerequisites:\n  declared:\n    - kind: ConfigMap\n      namespace: flux-system\n      name: apps-vars\n      createdBy: the cluster's bootstrap play\n"}}, verify.Warn,
			RaceDep, "which it applies itself: a changed knob is substituted one reconcile late"},
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
			if c.Verdict != tc.verdict || !holds(c, tc.det, tc.want) {
				t.Fatalf("want check.race/flux-system/apps %s with a %s finding holding\n%s\ngot:\n%s", tc.verdict, tc.det, tc.want, dump(rep))
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

// copyCheckFixture copies testdata/check/name and applies edits (old ""
// appends new).
func copyCheckFixture(t *testing.T, name string, edits ...edit) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("../../testdata/check", name))); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		applyMutation(t, dst, mutation{e.file, e.old, e.new})
	}
	return dst
}

// TestUnreadText: an undefined ${VAR} where no program reads it — a line
// whose first non-space character is # in an embedded script or config
// file, or a CustomResourceDefinition's description. kustomize-controller
// substitutes the whole YAML of each object (fluxcd/pkg/kustomize v1.35.6
// SubstituteVariables → varSubstitution → fluxcd/pkg/envsubst Eval) and
// knows no comment of an embedded file: with StrictPostBuildSubstitutions
// off (the default before kustomize-controller v1.9.0) the mapper answers
// every name as set ("vars[s], true"), so it renders empty and the
// Kustomization is Ready — a warning, since nothing reads it; with strict
// on, envsubst's evalFunc fails "variable not set (strict mode)" wherever
// it stands — a failure. Either way located at the variable's own line
// (testdata/check/fail-open/apps/scripts.yaml has a YAML comment naming
// ${RESTORE_HOST} above it, on line 8).
func TestUnreadText(t *testing.T) {
	t.Parallel()
	strictOn := edit{"clusters/dev/flux-system/flux-instance.yaml", `version: "2.3.x"`, `version: "2.9.x"`}
	for _, tc := range []struct {
		name    string
		edits   []edit
		verdict verify.Verdict
		exit    int
		want    []string
		// found: the findings check.substitution/flux-system/apps must have.
		found []wantFinding
		not   []string
	}{
		{name: "fail open: warnings at their lines", verdict: verify.Warn, exit: session.ExitOK,
			want: []string{"it renders empty there, where nothing reads it — fail open on this release (kustomize-controller v1.3.0 (Flux v2.3.0) defaults StrictPostBuildSubstitutions to false)"},
			found: []wantFinding{
				{Undefined, "apps/scripts.yaml:12: ${RESTORE_HOST} in ConfigMap/default/scripts (a commented-out line of backup.sh) is not defined"},
				{Undefined, "apps/scripts.yaml:18: ${UPSTREAM_HOST} in ConfigMap/default/scripts (a commented-out line of nginx.conf)"},
				{Undefined, "apps/crd.yaml:28: ${WIDGET_NAME} in CustomResourceDefinition/widgets.example.invalid (a description)"},
				{Undefined, "apps/crd.yaml:28: ${WIDGET_NAMESPACE} in CustomResourceDefinition/widgets.example.invalid (a description)"}},
			// A default in a commented-out line renders into the comment:
			// no finding (uncommented, the script's check would be dead).
			not: []string{"RESTIC_PASSWORD", "apps/scripts.yaml:8"}},
		{name: "strict: the controller fails it, at its line", edits: []edit{strictOn}, verdict: verify.Fail, exit: session.ExitFailed,
			found: []wantFinding{{Undefined, "apps/scripts.yaml:12: ${RESTORE_HOST} in ConfigMap/default/scripts (a commented-out line of backup.sh) is not defined (substitutes from spec.postBuild.substitute of flux-system/apps (clusters/dev/apps.yaml:1)): though nothing reads it there, strict substitution fails the whole Kustomization flux-system/apps"},
				{Undefined, "apps/crd.yaml:28: ${WIDGET_NAME} in CustomResourceDefinition/widgets.example.invalid (a description)"}}},
		{name: "the line uncommented: read, an advisory on this fail-open release", edits: []edit{{"apps/scripts.yaml", "    # restore with: restic", "    echo restore with: restic"}}, verdict: verify.Warn, exit: session.ExitOK,
			found: []wantFinding{{Undefined, "apps/scripts.yaml:12: ${RESTORE_HOST} in ConfigMap/default/scripts is not defined (substitutes from spec.postBuild.substitute of flux-system/apps (clusters/dev/apps.yaml:1)): it renders empty: fail open on this release"},
				{Undefined, "apps/scripts.yaml:18: ${UPSTREAM_HOST} in ConfigMap/default/scripts (a commented-out line of nginx.conf)"}}},
		{name: "also in a line that is read: an advisory on this fail-open release", edits: []edit{{"apps/scripts.yaml", "  cluster: ${CLUSTER}\n", "  cluster: ${CLUSTER}\n  upstream: ${UPSTREAM_HOST}\n"}}, verdict: verify.Warn, exit: session.ExitOK,
			found: []wantFinding{{Undefined, "apps/scripts.yaml:8: ${UPSTREAM_HOST} in ConfigMap/default/scripts is not defined"}}},
		{name: "a description-like field outside a CRD is read: an advisory on this fail-open release", edits: []edit{{"apps/scripts.yaml", "  cluster: ${CLUSTER}\n", "  cluster: ${CLUSTER}\n  description: for ${WIDGET_NAME}\n"}}, verdict: verify.Warn, exit: session.ExitOK,
			found: []wantFinding{{Undefined, "apps/scripts.yaml:8: ${WIDGET_NAME} in ConfigMap/default/scripts is not defined"}}},
		// Issue 55 item 4: fail open, an undefined variable renders empty and
		// the Kustomization is Ready (the rows above: advisories) — unless the
		// emptied value is a name the API server refuses, which fails the
		// apply; a strict release fails it wherever it stands (strictOn).
		{name: "fail open, a name the variable empties into an invalid one: a failure", edits: []edit{{"apps/scripts.yaml", "  name: scripts\n", "  name: scripts-${SUFFIX}-\n"}}, verdict: verify.Fail, exit: session.ExitFailed,
			found: []wantFinding{{Undefined, `its name renders "scripts--", which is not a valid name: the API server refuses it`}}},
		{name: "fail open, a name the variable empties into a valid one: an advisory", edits: []edit{{"apps/scripts.yaml", "  name: scripts\n", "  name: scripts-v${SUFFIX}\n"}}, verdict: verify.Warn, exit: session.ExitOK,
			found: []wantFinding{{Undefined, "${SUFFIX} in ConfigMap/default/scripts-v${SUFFIX} is not defined"}}},
		{name: "strict, a name the variable empties into a valid one: a failure", edits: []edit{strictOn, {"apps/scripts.yaml", "  name: scripts\n", "  name: scripts-v${SUFFIX}\n"}}, verdict: verify.Fail, exit: session.ExitFailed,
			found: []wantFinding{{Undefined, "strict substitution fails the whole Kustomization flux-system/apps"}}},
		{name: "a commented default uncommented: the script's check is dead", edits: []edit{{"apps/scripts.yaml", `    # if [ -z "${RESTIC_PASSWORD:-}" ]`, `    if [ -z "${RESTIC_PASSWORD:-}" ]`}}, verdict: verify.Fail, exit: session.ExitFailed,
			found: []wantFinding{{DefaultOp, "apps/scripts.yaml:13: ${RESTIC_PASSWORD:-…} in a script of ConfigMap/default/scripts"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := run(t, copyCheckFixture(t, "fail-open", tc.edits...))
			c := checkOf(rep, "check.substitution/flux-system/apps")
			out := dump(rep)
			if c.Verdict != tc.verdict || session.ReportCode(rep) != tc.exit {
				t.Fatalf("check.substitution/flux-system/apps %s, exit %d; want %s, exit %d:\n%s", c.Verdict, session.ReportCode(rep), tc.verdict, tc.exit, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q in:\n%s", w, out)
				}
			}
			for _, w := range tc.found {
				if !hasFinding(c, w.det, w.text) {
					t.Errorf("want %s in check.substitution/flux-system/apps:\n%s", w, out)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(out, n) {
					t.Errorf("%q reported:\n%s", n, out)
				}
			}
		})
	}
}

// TestLiteralOnlyWhereLikelyAMistake: kustomize-controller v1.9.5 runs
// post-build substitution only for a Kustomization with spec.postBuild
// (kustomization_controller.go build: "if obj.Spec.PostBuild != nil"), so
// without it every ${…} ships as written — what a script's author wants.
// [literal] names one there only when its variable is a knob another
// Kustomization of the environment substitutes (a key of a substituteFrom
// object, a postBuild.substitute name): a likely forgotten postBuild.
func TestLiteralOnlyWhereLikelyAMistake(t *testing.T) {
	t.Parallel()
	docs := func(v string) mutation { return mutation{"docs/readme.yaml", "", "  extra: " + v + "\n"} }
	for _, tc := range []struct {
		name string
		ms   []mutation
		want string // a [literal] finding's line; "" : no finding, the docs gate passes
	}{
		{"a knob of a substituteFrom object", []mutation{docs(`"https://${domain}"`)},
			"docs/readme.yaml:8: ${domain} in ConfigMap/default/docs: Kustomization flux-system/docs has no postBuild, so it ships literally, though domain is a knob of the environment (ConfigMap/flux-system/cluster-vars, substituted by Kustomization flux-system/infra)"},
		{"a knob of a postBuild.substitute", []mutation{docs(`"${appName}"`)},
			"${appName} in ConfigMap/default/docs: Kustomization flux-system/docs has no postBuild, so it ships literally, though appName is a knob of the environment (spec.postBuild.substitute of Kustomization flux-system/apps)"},
		{"a knob with a default form", []mutation{docs(`"${domain:-x}"`)}, "${domain:-…} in ConfigMap/default/docs"},
		{"a shell variable of a script", []mutation{docs(`"#!/bin/sh\necho ${HOME} ${1:-x}\n"`)}, ""},
		{"a template some program fills in", []mutation{docs(`"Hello ${USER_NAME}"`)}, ""},
		{"an expression the parser rejects", []mutation{docs(`"${ARR[0]}"`)}, ""},
		{"a knob on a commented-out line of a script", []mutation{docs(`"#!/bin/sh\n# set ${domain} here\necho hi\n"`)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rep := run(t, fixture(t, tc.ms...))
			c := checkOf(rep, "check.substitution/flux-system/docs")
			if tc.want == "" {
				if c.Verdict != verify.Pass || session.ReportCode(rep) != session.ExitOK {
					t.Fatalf("want no finding, exit 0; got exit %d:\n%s", session.ReportCode(rep), dump(rep))
				}
				return
			}
			if c.Verdict != verify.Warn || !hasFinding(c, Literal, tc.want) {
				t.Fatalf("want a literal warning holding\n%s\ngot:\n%s", tc.want, dump(rep))
			}
		})
	}
}

// TestDefaultRendered: the [default-op] advisory states the value
// kustomize-controller renders, computed with its own envsubst
// (fluxcd/pkg/envsubst v1.7.1, as fluxcd/pkg/kustomize v1.35.6
// varSubstitution calls it): the arguments are evaluated first, a nested
// ${B} with the Kustomization's variables, and every default operator
// renders through toDefault (lookupFunc) — the variable when non-empty,
// else its arguments joined; ":+" included, so ${UNSET:+x} renders "x".
func TestDefaultRendered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ expr, want string }{
		{"${missingKnob:=${domain}}", `${missingKnob:=…} in ConfigMap/web/web: missingKnob is not defined for Kustomization flux-system/apps (`},
		{"${missingKnob:=${domain}}", `so its default "dev.example.invalid" renders here`},
		{"${missingKnob:-https://${appName}.${domain}/x}", `so its default "https://web.dev.example.invalid/x" renders here`},
		{"${missingKnob:=${otherMissing:-fallback}}", `so its default "fallback" renders here`},
		{"${missingKnob:-plain}", `so its default "plain" renders here`},
		{"${missingKnob:+set}", `so its default "set" renders here`},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			t.Parallel()
			rep := run(t, fixture(t, mutation{"apps/web.yaml", "", "  extra: \"" + tc.expr + "\"\n"}))
			c := checkOf(rep, "check.substitution/flux-system/apps")
			if c.Verdict != verify.Warn || !hasFinding(c, DefaultOp, tc.want) {
				t.Fatalf("want a default-op warning holding %q, got:\n%s", tc.want, dump(rep))
			}
		})
	}
}

// TestFailRulesCited walks the FAIL rules of check.graph and
// check.substitution once more against the controllers at the release
// the clean fixture deploys (Flux v2.9.5: kustomize-controller v1.9.5 with
// fluxcd/pkg/kustomize v1.35.6 and fluxcd/pkg/envsubst v1.7.1,
// helm-controller v1.6.4). Each row names the controller code that
// refuses the input, and where it can, runs that code on it (controller).
// [root-wait], [race] (fresh cluster) and [wait-order] are cited in
// TestRootWait, TestSubstituteFromItsOwnObject and TestWaitOrder.
func TestFailRulesCited(t *testing.T) {
	t.Parallel()
	strictMapper := func(vars map[string]string) func(string) (string, bool) {
		// fluxcd/pkg/kustomize varSubstitution with strict on.
		return func(s string) (string, bool) { v, ok := vars[s]; return v, ok }
	}
	for _, tc := range []struct {
		name, gate, want string
		// det: want is in a finding of det ("": in the check's text).
		det verify.Detector
		ms  []mutation
		// controller runs the controller's own code on the input and
		// returns its refusal (nil: it accepts, which fails the row).
		controller func() error
	}{
		// envsubst's evalFunc: a bare ${var} whose mapper says unset fails
		// "variable not set (strict mode)"; kustomize-controller v1.9.5
		// defaults StrictPostBuildSubstitutions on (internal/features).
		{name: "undefined, strict", gate: "check.substitution/flux-system/apps",
			ms:  []mutation{{"apps/web.yaml", "", "  extra: \"${undefinedKnob}\"\n"}},
			det: Undefined, want: "${undefinedKnob} in ConfigMap/web/web is not defined",
			controller: func() error {
				_, err := envsubst.Eval("${undefinedKnob}", strictMapper(map[string]string{"domain": "x"}))
				return err
			}},
		// envsubst/parse: "missing closing brace"; SubstituteVariables
		// returns it ("envsubst error") and build fails the Kustomization.
		{name: "parse error", gate: "check.substitution/flux-system/apps",
			ms:  []mutation{{"apps/web.yaml", "", "  extra: \"${ARR[0]}\"\n"}},
			det: ParseError, want: "${ARR[0]} in ConfigMap/web/web: the substitution parser rejects it (missing closing brace)",
			controller: func() error { _, err := parse.Parse("${ARR[0]}"); return err }},
		// varSubstitution validates every variable name against
		// varsubRegex before it substitutes anything.
		{name: "invalid variable name", gate: "check.substitution/flux-system/infra",
			ms:   []mutation{{"clusters/dev/cluster-vars.yaml", "", "  bad-key: x\n"}, {"clusters/prod/cluster-vars.yaml", "", "  bad-key: x\n"}},
			want: "'bad-key' var name is invalid"},
		// checkDependencies: "dependency '%s' not found", DependencyNotReady,
		// retried every --requeue-dependency forever.
		{name: "dangling dependsOn", gate: "check.graph",
			ms:  []mutation{{"clusters/base/apps.yaml", "    - name: infra\n", "    - name: infra\n    - name: ghost\n"}},
			det: Dangling, want: "Kustomization flux-system/apps depends on flux-system/ghost, which the environment does not render: it waits forever (DependencyNotReady)"},
		// checkDependencies: each waits for the other's Ready condition.
		{name: "cycle", gate: "check.graph",
			ms:  []mutation{{"clusters/base/infrastructure.yaml", "    - name: flux-system\n", "    - name: flux-system\n    - name: docs\n"}},
			det: Cycle, want: "dependsOn circular dependency detected"},
		// helm-controller v1.6.4 checkDependencies gets each dependsOn entry
		// as a HelmRelease: "unable to get '%s' dependency".
		{name: "HelmRelease depends on a Kustomization", gate: "check.graph",
			ms:  []mutation{{"apps/releases.yaml", "    - name: web-db\n", "    - name: web-db\n    - name: apps\n      namespace: flux-system\n"}},
			det: HelmDependsOn, want: "HelmRelease web/web depends on flux-system/apps, which is a Kustomization"},
		// helm-controller v1.6.4 getSource / getSourceFromOCIRef: the
		// chartRef object is read from the API; not found, never installed.
		{name: "chart source not rendered", gate: "check.graph",
			ms:  []mutation{{"apps/releases.yaml", "    name: web-chart\n  dependsOn", "    name: app-chart\n  dependsOn"}},
			det: ChartSource, want: "HelmRelease web/web reads its chart from OCIRepository/web/app-chart, which the environment does not render"},
		// checkDependencies on a root nothing creates: "not found" forever.
		{name: "no root, depended on", gate: "check.graph",
			ms:  []mutation{{"clusters/dev/kustomization.yaml", "  - sync.yaml\n", ""}},
			det: NoRoot, want: "clusters/dev renders no root Kustomization flux-system/flux-system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.controller != nil && tc.controller() == nil {
				t.Fatalf("the controller's code accepts the input of %s", tc.name)
			}
			rep := run(t, fixture(t, tc.ms...))
			c := checkOf(rep, tc.gate)
			if c.Verdict != verify.Fail || !holds(c, tc.det, tc.want) || session.ReportCode(rep) != session.ExitFailed {
				t.Fatalf("want %s fail with %q (detector %q), exit 1; got exit %d:\n%s", tc.gate, tc.want, tc.det, session.ReportCode(rep), dump(rep))
			}
			// Positive: the clean fixture passes that gate.
			if c := checkOf(run(t, fixture(t)), tc.gate); c.ID != "" && c.Verdict != verify.Pass {
				t.Fatalf("clean fixture: %s %s", tc.gate, c.Verdict)
			}
		})
	}
}
