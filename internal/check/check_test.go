package check

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/sandbox/gitserver"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const clean = "../../testdata/check/clean"

// mutation edits one file of a copy of the clean fixture: old is replaced
// by new once (old "" appends new).
type mutation struct{ file, old, new string }

func fixture(t *testing.T, ms ...mutation) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(clean)); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		p := filepath.Join(dst, m.file)
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
	return dst
}

func run(t *testing.T, repo string, disable ...verify.Detector) *verify.Report {
	t.Helper()
	o := Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/dev"}, Disable: map[verify.Detector]bool{}}
	for _, d := range disable {
		o.Disable[d] = true
	}
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	tableGates(t, r)
	rep := verify.NewReport("check")
	rep.Add(r.Checks...)
	return rep
}

// tableGates holds every finding to its row of the table of detectors: a
// row there is, and the finding reports under the row's gate.
func tableGates(t *testing.T, r *Result) {
	t.Helper()
	for _, f := range r.Findings {
		row := detectorRow(f.Detector)
		switch {
		case row == nil:
			t.Errorf("finding of detector %q, which has no row in the table of detectors", f.Detector)
		case f.Gate != row.Gate.ID && !strings.HasPrefix(f.Gate, row.Gate.ID+"/"):
			t.Errorf("finding of detector %q reports under %s; its row says %s", f.Detector, f.Gate, row.Gate.ID)
		}
	}
}

// checkOf is the check id of rep (the zero Check when none).
func checkOf(rep *verify.Report, id string) verify.Check {
	for _, c := range rep.Checks {
		if c.ID == id {
			return c
		}
	}
	return verify.Check{}
}

func text(c verify.Check) string { return c.Message + "\n" + strings.Join(c.Evidence, "\n") }

func dump(rep *verify.Report) string {
	var b strings.Builder
	_ = verify.WriteVerbose(&b, rep)
	return b.String()
}

func TestCleanPasses(t *testing.T) {
	t.Parallel()
	rep := run(t, fixture(t))
	if session.ReportCode(rep) != session.ExitOK || rep.Verdict() != verify.Pass {
		t.Fatalf("clean fixture:\n%s", dump(rep))
	}
	// Every gate of the phase reported.
	if missing := verify.Missing(Gates(), rep.Checks, "x"); len(missing) > 0 {
		t.Fatalf("gates not reported: %v", missing)
	}
}

var wantEnvAdd = mutation{"apps/web.yaml", "", "  extra: \"$${ARR[0]} $${undefinedKnob} $${X:-d} $${Y:=z} $${Z:?m} $$HOME $(date)\"\n"}

// TestDefinedDefaultsPass: a default-operator form on a name the
// Kustomization defines never renders its default (kustomize-controller
// v1.9.5 substitutes with fluxcd/pkg/envsubst, whose :-, :=, :? and :+ take
// the variable when it is set and non-empty): no finding, in a plain field
// or in a script.
func TestDefinedDefaultsPass(t *testing.T) {
	t.Parallel()
	rep := run(t, fixture(t, mutation{"apps/web.yaml", "", "  extra: \"${domain:=dev.example.invalid} ${domain:?domain must be set} ${domain:-x} ${domain:+set}\"\n  check.sh: \"#!/bin/sh\\necho ${domain:-none}\\n\"\n"}))
	if session.ReportCode(rep) != session.ExitOK || rep.Verdict() != verify.Pass {
		t.Fatalf("defaults on a defined name are flagged:\n%s", dump(rep))
	}
}

func TestEscapedFormsPass(t *testing.T) {
	t.Parallel()
	rep := run(t, fixture(t, wantEnvAdd,
		mutation{"infrastructure/cni.yaml", "    echo", "    # $${COMMENTED:-x} $${ARR[1]}\n    echo"}))
	if session.ReportCode(rep) != session.ExitOK || rep.Verdict() != verify.Pass {
		t.Fatalf("escaped forms are flagged:\n%s", dump(rep))
	}
}

// waitOrderRelease is a HelmRelease depending on web/web-db, which
// Kustomization apps applies.
const waitOrderRelease = `---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web-ui
  namespace: web
spec:
  interval: 10m
  chartRef:
    kind: OCIRepository
    name: web-chart
  dependsOn:
    - name: web-db
`

func TestDefects(t *testing.T) {
	t.Parallel()
	webExtra := func(v string) mutation { return mutation{"apps/web.yaml", "", "  extra: \"" + v + "\"\n"} }
	for _, tc := range []struct {
		name    string
		ms      []mutation
		det     verify.Detector
		id      string
		verdict verify.Verdict
		want    string   // in the line of a finding of det
		also    []string // other gates this defect legitimately trips
		// alone: the detector's finding is the only one in its gate, so
		// disabling it makes the gate pass.
		alone bool
		// alsoFails: an also gate fails, so the run exits 1.
		alsoFails bool
	}{
		{name: "undefined", ms: []mutation{webExtra("${undefinedKnob}")}, det: Undefined,
			id: "check.substitution/flux-system/apps", verdict: verify.Fail, alone: true,
			want: "apps/web.yaml:10: ${undefinedKnob} in ConfigMap/web/web is not defined"},
		// Default-operator forms are judged by where they stand (issue
		// #29): on a defined name never; on an undefined one a template
		// default is an advisory, a script's shell variable and a :?
		// message rendered as the value are defects.
		{name: "default on undefined", ms: []mutation{webExtra("${missingKnob:-fallback}")}, det: DefaultOp,
			id: "check.substitution/flux-system/apps", verdict: verify.Warn, alone: true,
			want: `apps/web.yaml:10: ${missingKnob:-…} in ConfigMap/web/web: missingKnob is not defined for Kustomization flux-system/apps`},
		{name: "alternate on undefined", ms: []mutation{webExtra("${missingKnob:+set}")}, det: DefaultOp,
			id: "check.substitution/flux-system/apps", verdict: verify.Warn, alone: true,
			want: "${missingKnob:+…}"},
		{name: "error operator on undefined", ms: []mutation{webExtra("${missingKnob:?must be set}")}, det: DefaultOp,
			id: "check.substitution/flux-system/apps", verdict: verify.Fail, alone: true,
			want: "${missingKnob:?…} in ConfigMap/web/web: missingKnob is not defined in this environment"},
		{name: "shell default in a script", ms: []mutation{{"apps/web.yaml", "", "  check.sh: \"#!/bin/sh\\nif [ -z \\\"${OIDC_SECRET:-}\\\" ]; then exit 1; fi\\n\"\n"}}, det: DefaultOp,
			id: "check.substitution/flux-system/apps", verdict: verify.Fail, alone: true,
			want: "${OIDC_SECRET:-…} in a script of ConfigMap/web/web: OIDC_SECRET is not defined in this environment"},
		{name: "array subscript", ms: []mutation{webExtra("${ARR[0]}")}, det: ParseError,
			id: "check.substitution/flux-system/apps", verdict: verify.Fail, alone: true,
			want: "apps/web.yaml:10: ${ARR[0]} in ConfigMap/web/web: the substitution parser rejects it (missing closing brace)"},
		// Measured with fluxcd/pkg/envsubst v1.7.1 (kustomize-controller
		// v1.9.5): the colon-less forms other than = do not parse.
		{name: "colon-less default", ms: []mutation{webExtra("${domain-x}")}, det: ParseError,
			id: "check.substitution/flux-system/apps", verdict: verify.Fail, alone: true,
			want: "${domain-x}"},
		{name: "block scalar comment line", ms: []mutation{{"infrastructure/cni.yaml", "# the API host is ${k8sServiceHost}", "# the API host is ${undefinedInComment}"}}, det: Undefined,
			id: "check.substitution/flux-system/infra", verdict: verify.Fail, alone: true,
			want: "infrastructure/cni.yaml:11: ${undefinedInComment} in ConfigMap/kube-system/cni-config"},
		{name: "literal without postBuild", ms: []mutation{{"docs/readme.yaml", "plain text, no variables", "see https://${domain}"}}, det: Literal,
			id: "check.substitution/flux-system/docs", verdict: verify.Warn, alone: true,
			want: "docs/readme.yaml:7: ${domain} in ConfigMap/default/docs: Kustomization flux-system/docs has no postBuild, so it ships literally"},
		{name: "literal with postBuild but no variables", ms: []mutation{
			{"docs/readme.yaml", "plain text, no variables", "see https://${domain}"},
			{"clusters/base/apps.yaml", "  dependsOn:\n    - name: apps\n", "  dependsOn:\n    - name: apps\n  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: docs-vars\n        optional: true\n"}}, det: Literal,
			id: "check.substitution/flux-system/docs", verdict: verify.Warn, alone: true,
			want: "docs/readme.yaml:7: ${domain} in ConfigMap/default/docs: Kustomization flux-system/docs substitutes from nothing (no variables), so nothing is substituted and it ships literally"},
		// An advisory (issue #38 item 5): no controller compares
		// environments; prod's own check reports its undefined ${newKnob}.
		{name: "knob in one environment", ms: []mutation{{"clusters/dev/cluster-vars.yaml", "", "  newKnob: x\n"}, webExtra("${newKnob}")}, det: KnobEnv,
			id: "check.knobs/ConfigMap/flux-system/cluster-vars", verdict: verify.Warn, alone: true,
			want: "clusters/dev/cluster-vars.yaml:10: knob newKnob of ConfigMap/flux-system/cluster-vars is defined in clusters/dev but not in clusters/prod"},
		{name: "substituteFrom object nobody renders", ms: []mutation{{"clusters/base/apps.yaml", "      - kind: Secret\n        name: app-secrets\n", "      - kind: Secret\n        name: app-secrets\n      - kind: ConfigMap\n        name: ghost-vars\n"}}, det: Prerequisite,
			id: "check.knobs/ConfigMap/flux-system/ghost-vars", verdict: verify.Warn, alone: true,
			want: "clusters/base/apps.yaml:25: prerequisite ConfigMap/flux-system/ghost-vars (no key the repository shows used) is substituted from by flux-system/apps and no Kustomization of clusters/dev renders it"},
		{name: "unused knob", ms: []mutation{{"clusters/dev/cluster-vars.yaml", "", "  unusedKnob: x\n"}, {"clusters/prod/cluster-vars.yaml", "", "  unusedKnob: x\n"}}, det: KnobUnused,
			id: "check.knobs/ConfigMap/flux-system/cluster-vars", verdict: verify.Warn, alone: true,
			want: "clusters/dev/cluster-vars.yaml:10: knob unusedKnob of ConfigMap/flux-system/cluster-vars is referenced by none"},
		{name: "cycle", ms: []mutation{{"clusters/base/infrastructure.yaml", "    - name: flux-system\n", "    - name: flux-system\n    - name: docs\n"}}, det: Cycle,
			id: "check.graph", verdict: verify.Fail, alone: true,
			want: "dependsOn circular dependency detected: flux-system/infra -> flux-system/docs -> flux-system/apps -> flux-system/infra"},
		{name: "dangling dependsOn", ms: []mutation{{"clusters/base/apps.yaml", "    - name: infra\n", "    - name: infra\n    - name: ghost\n"}}, det: Dangling,
			id: "check.graph", verdict: verify.Fail, alone: true,
			want: "clusters/base/apps.yaml:16: Kustomization flux-system/apps depends on flux-system/ghost"},
		// Located from the YAML node: the entry naming "inf", not the
		// first line of the file containing "name: inf" (infra's).
		{name: "dangling dependsOn, a prefix of another name", ms: []mutation{{"clusters/base/apps.yaml", "    - name: infra\n", "    - name: infra\n    - name: inf\n"}}, det: Dangling,
			id: "check.graph", verdict: verify.Fail, alone: true,
			want: "clusters/base/apps.yaml:16: Kustomization flux-system/apps depends on flux-system/inf,"},
		// HelmReleases, with helm-controller's rules (v1.6.4): dependsOn
		// names HelmReleases only, its namespace defaults to the
		// dependent's (checkDependencies); exactly one of chart/chartRef
		// (isValidChartRef); the chart source must exist (getSource).
		{name: "dangling HelmRelease dependsOn", ms: []mutation{{"apps/releases.yaml", "    - name: web-db\n", "    - name: web-db\n    - name: ghost\n"}}, det: Dangling,
			id: "check.graph", verdict: verify.Fail, alone: true,
			want: "apps/releases.yaml:53: HelmRelease web/web depends on web/ghost, which the environment does not render"},
		{name: "HelmRelease cycle", ms: []mutation{{"apps/releases.yaml", "  interval: 10m\n  chart:\n", "  interval: 10m\n  dependsOn:\n    - name: web\n  chart:\n"}}, det: Cycle,
			id: "check.graph", verdict: verify.Fail, alone: true,
			want: "apps/releases.yaml:26: dependsOn circular dependency detected: web/web-db -> web/web -> web/web-db: none of these HelmReleases can ever become Ready"},
		{name: "HelmRelease depends on a Kustomization", ms: []mutation{{"apps/releases.yaml", "    - name: web-db\n", "    - name: web-db\n    - name: apps\n      namespace: flux-system\n"}}, det: HelmDependsOn,
			id: "check.graph", verdict: verify.Fail, alone: true,
			want: "apps/releases.yaml:53: HelmRelease web/web depends on flux-system/apps, which is a Kustomization"},
		// A Kustomization's health check (wait: true) waits for a release
		// whose dependency another Kustomization applies (kustomize-
		// controller v1.9.5 checkHealth holds a worker; helm-controller
		// v1.6.4 checkDependencies keeps the release DependencyNotReady).
		{name: "health check waits on a release its dependent applies", ms: []mutation{{"infrastructure/cni.yaml", "", waitOrderRelease}}, det: WaitOrder,
			id: "check.graph", verdict: verify.Fail, alone: true, also: []string{"check.prune-hazard/flux-system/apps/web"},
			want: "Kustomization flux-system/infra health-checks HelmReleases that need releases Kustomization flux-system/apps applies (web/web-ui needs web/web-db), and flux-system/apps waits for flux-system/infra: a deadlock"},
		{name: "health check waits on a release of an unordered Kustomization", ms: []mutation{
			{"clusters/base/apps.yaml", "  path: ./docs\n  prune: true\n", "  path: ./docs\n  prune: true\n  wait: true\n"},
			{"clusters/base/apps.yaml", "  dependsOn:\n    - name: apps\n", "  dependsOn:\n    - name: infra\n"},
			{"docs/readme.yaml", "", waitOrderRelease}}, det: WaitOrder,
			id: "check.graph", verdict: verify.Warn, alone: true, also: []string{"check.prune-hazard/flux-system/apps/web"},
			want: "Kustomization flux-system/docs health-checks HelmReleases that need releases Kustomization flux-system/apps applies (web/web-ui needs web/web-db), without depending on flux-system/apps: it holds one of kustomize-controller's --concurrent workers"},
		{name: "chartRef source not rendered", ms: []mutation{{"apps/releases.yaml", "    name: web-chart\n  dependsOn", "    name: app-chart\n  dependsOn"}}, det: ChartSource,
			id: "check.graph", verdict: verify.Fail, alone: true,
			want: "apps/releases.yaml:41: HelmRelease web/web reads its chart from OCIRepository/web/app-chart, which the environment does not render"},
		// Review item 19: the chart's source is not rendered, but a path
		// did not build and may render it: a warning, judged once it
		// builds.
		{name: "chartRef source not rendered, a path unbuilt", ms: []mutation{{"apps/releases.yaml", "    name: web-chart\n  dependsOn", "    name: app-chart\n  dependsOn"}, {"clusters/base/apps.yaml", "  path: ./docs\n", "  path: ./doc\n"}}, det: ChartSource,
			id: "check.graph", verdict: verify.Warn, alone: true, also: []string{"check.render", "check.substitution/flux-system/docs"}, alsoFails: true,
			want: "HelmRelease web/web reads its chart from OCIRepository/web/app-chart, which no path that built renders"},
		{name: "chart template source not rendered", ms: []mutation{{"apps/releases.yaml", "        name: charts\n", "        name: other-charts\n"}}, det: ChartSource,
			id: "check.graph", verdict: verify.Fail, alone: true,
			want: "HelmRelease web/web-db reads its chart from HelmRepository/web/other-charts"},
		{name: "chart and chartRef both set", ms: []mutation{{"apps/releases.yaml", "  chartRef:\n", "  chart:\n    spec:\n      chart: app\n      sourceRef:\n        kind: HelmRepository\n        name: charts\n  chartRef:\n"}}, det: ChartSource,
			// The CRD's own rule refuses it too, before the controller sees it.
			id: "check.graph", verdict: verify.Fail, alone: true, also: []string{"check.substitution/flux-system/apps"},
			want: "HelmRelease web/web: spec.chart and spec.chartRef are mutually exclusive"},
		// CEL compiled as the controllers compile it: readyExpr with
		// variables self and dep and a bool result (evalReadyExpr,
		// kustomize-controller v1.9.5 and helm-controller v1.6.4),
		// healthCheckExprs with fluxcd/pkg/runtime/cel.NewStatusReader.
		{name: "readyExpr that does not compile", ms: []mutation{{"clusters/base/apps.yaml", "    - name: infra\n", "    - name: infra\n      readyExpr: dep.status.conditions.filter(c, c.type == 'Ready'\n"}}, det: BadCEL,
			id: "check.cel", verdict: verify.Fail, alone: true,
			want: "Kustomization flux-system/apps: dependsOn infra readyExpr does not compile"},
		{name: "readyExpr that is not a bool", ms: []mutation{{"apps/releases.yaml", "    - name: web-db\n", "    - name: web-db\n      readyExpr: dep.metadata.name\n"}}, det: BadCEL,
			id: "check.cel", verdict: verify.Fail, alone: true,
			want: "HelmRelease web/web: dependsOn web-db readyExpr does not compile"},
		{name: "healthCheckExprs without current", ms: []mutation{{"clusters/base/apps.yaml", "    - name: infra\n", "    - name: infra\n  healthCheckExprs:\n    - apiVersion: example.com/v1\n      kind: Thing\n      failed: status.phase == 'Failed'\n"}}, det: BadCEL,
			// The CRD requires current too: the API server refuses it first.
			id: "check.cel", verdict: verify.Fail, alone: true, also: []string{"check.substitution/flux-system/flux-system"},
			want: "Kustomization flux-system/apps: healthCheckExprs: failed to create custom status evaluator for healthchecks[0]: expression Current not specified"},
		// kustomize-controller v1.9.5 substitutes the YAML of each built
		// object and decodes it again: a quoted "${replicas}" is written
		// unquoted by the build, so "3" becomes a number and a ConfigMap's
		// data refuses it (kustomize-controller#625, docs: post build
		// substitution of numbers and booleans).
		{name: "a substituted number where a string is wanted", ms: []mutation{
			{"clusters/dev/cluster-vars.yaml", "", "  replicas: \"3\"\n"}, {"clusters/prod/cluster-vars.yaml", "", "  replicas: \"3\"\n"},
			{"apps/web.yaml", "", "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sizes\n  namespace: web\ndata:\n  replicas: \"${replicas}\"\n"}}, det: TypeChange,
			id: "check.substitution/flux-system/apps", verdict: verify.Fail, alone: true,
			want: "apps/web.yaml:17: ConfigMap/web/sizes after substitution is not a valid ConfigMap"},
		// kustomize-controller v1.9.5 getSource: "Source '…' not found",
		// requeued forever (the rendered source of another repository is
		// TestNotCheckableSkips' note, no finding).
		{name: "sourceRef nothing renders", ms: []mutation{{"clusters/base/apps.yaml", "    name: flux-system\n  dependsOn:\n    - name: apps", "    name: other\n  dependsOn:\n    - name: apps"}}, det: SourceMissing,
			// Its substitution is an optional skip: its path never applies.
			id: "check.graph", verdict: verify.Fail, alone: true, also: []string{"check.substitution/flux-system/docs"},
			want: "clusters/base/apps.yaml:36: Kustomization flux-system/docs reads GitRepository/flux-system/other, which nothing in the environment renders and which is not the root's source (GitRepository/flux-system/flux-system): kustomize-controller reports \"Source 'GitRepository/flux-system/other' not found\" and retries forever"},
		{name: "root applies another directory", ms: []mutation{{"clusters/dev/sync.yaml", "path: ./clusters/dev", "path: ./clusters/base"}}, det: Unreachable,
			id: "check.graph", verdict: verify.Fail, alone: true,
			want: "the root Kustomization flux-system/flux-system applies ./clusters/base, not the environment's directory clusters/dev"},
		{name: "root waits", ms: []mutation{{"clusters/dev/sync.yaml", "wait: false", "wait: true"}}, det: RootWait,
			id: "check.graph", verdict: verify.Fail, alone: true,
			want: "clusters/dev/sync.yaml:10: the root Kustomization flux-system/flux-system has wait: true"},
		{name: "no root", ms: []mutation{{"clusters/dev/kustomization.yaml", "  - sync.yaml\n", ""}}, det: NoRoot,
			id: "check.graph", verdict: verify.Fail,
			want: "clusters/dev/kustomization.yaml: clusters/dev renders no root Kustomization flux-system/flux-system"},
		{name: "substitution race", ms: []mutation{{"clusters/base/infrastructure.yaml", "  dependsOn:\n    - name: flux-system\n", ""}}, det: RaceDep,
			id: "check.race/flux-system/infra", verdict: verify.Fail, alone: true, also: []string{"check.race/flux-system/apps"},
			want: "clusters/base/infrastructure.yaml:1: Kustomization flux-system/infra substitutes from ConfigMap/flux-system/cluster-vars (clusters/dev/cluster-vars.yaml:1), applied by flux-system/flux-system, without depending on it"},
		// kustomize-controller v1.9.5 watches substituteFrom objects
		// labelled reconcile.fluxcd.io/watch: Enabled (main.go's
		// GetWatchConfigsPredicate, kustomization_manager.go's indexers):
		// the race is one reconcile wide, an advisory.
		{name: "substitution race on a watched object", ms: []mutation{
			{"clusters/base/infrastructure.yaml", "  dependsOn:\n    - name: flux-system\n", ""},
			{"clusters/dev/cluster-vars.yaml", "  namespace: flux-system\n", "  namespace: flux-system\n  labels:\n    reconcile.fluxcd.io/watch: Enabled\n"}}, det: RaceDep,
			id: "check.race/flux-system/infra", verdict: verify.Warn, alone: true, also: []string{"check.race/flux-system/apps"}, alsoFails: true,
			want: "Kustomization flux-system/infra substitutes from ConfigMap/flux-system/cluster-vars (clusters/dev/cluster-vars.yaml:1), applied by flux-system/flux-system, without depending on it; it is watched"},
		// Flux objects validated after substitution against the release's
		// CRDs, as the API server does on create (crdschema): an enum
		// value the schema does not allow refuses the object, and with it
		// the whole Kustomization's apply.
		{name: "a Flux field outside its enum", ms: []mutation{{"apps/releases.yaml", "  chartRef:\n    kind: OCIRepository\n", "  driftDetection:\n    mode: enable\n  chartRef:\n    kind: OCIRepository\n"}}, det: Schema,
			id: "check.substitution/flux-system/apps", verdict: verify.Fail, alone: true,
			want: "apps/releases.yaml:49: HelmRelease/web/web is refused by the API server (Flux v2.9.5's CRDs): spec.driftDetection.mode: Unsupported value: \"enable\""},
		// The class: a knob that reads as a number, substituted
		// into a field the CRD types as a string.
		{name: "a substituted number where a Flux field wants a string", ms: []mutation{
			{"clusters/dev/cluster-vars.yaml", "", "  helmTimeout: \"300\"\n"}, {"clusters/prod/cluster-vars.yaml", "", "  helmTimeout: \"300\"\n"},
			{"apps/releases.yaml", "  chartRef:\n    kind: OCIRepository\n", "  timeout: ${helmTimeout}\n  chartRef:\n    kind: OCIRepository\n"}}, det: Schema,
			id: "check.substitution/flux-system/apps", verdict: verify.Fail, alone: true,
			want: "spec.timeout: Invalid value: \"integer\": spec.timeout in body must be of type string"},
		{name: "an unknown field in a Flux object", ms: []mutation{{"apps/releases.yaml", "  chartRef:\n    kind: OCIRepository\n", "  intervl: 5m\n  chartRef:\n    kind: OCIRepository\n"}}, det: Schema,
			id: "check.substitution/flux-system/apps", verdict: verify.Warn, alone: true,
			want: "apps/releases.yaml:48: HelmRelease/web/web: field spec.intervl is not in Flux v2.9.5's CRDs, so the API server drops it"},
		// kustomize-controller v1.9.x (kustomization_controller.go,
		// reconcile) fails only the Kustomization whose build fails
		// (BuildFailed); the others are applied: one [build] finding.
		{name: "a path that is not a directory", ms: []mutation{{"clusters/base/apps.yaml", "  path: ./docs\n", "  path: ./doc\n"}}, det: Build,
			id: "check.render", verdict: verify.Fail, alone: true, also: []string{"check.substitution/flux-system/docs"},
			want: `clusters/base/apps.yaml:25: Kustomization flux-system/docs: spec.path "./doc" is not a directory of the repository: kustomize-controller fails it with 'kustomization path not found'`},
		{name: "prune hazard", ms: []mutation{{"apps/namespace.yaml", "", "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-system\n"}}, det: Prune,
			id: "check.prune-hazard/flux-system/apps/kube-system", verdict: verify.Warn,
			want: "apps/namespace.yaml:6: Kustomization flux-system/apps (prune: true) is the only declarer of Namespace kube-system (Kustomizations flux-system/infra deploy into it)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if r := detectorRow(tc.det); r == nil || r.Short == "" {
				t.Errorf("detector %s has no row with a SARIF rule text in the table of detectors", tc.det)
			}
			repo := fixture(t, tc.ms...)
			rep := run(t, repo)
			var got *verify.Check
			for i, c := range rep.Checks {
				if c.ID == tc.id {
					got = &rep.Checks[i]
				}
			}
			if got == nil || got.Verdict != tc.verdict || !hasFinding(*got, tc.det, tc.want) {
				t.Fatalf("want %s %s with a %s finding holding %q; got:\n%s", tc.id, tc.verdict, tc.det, tc.want, dump(rep))
			}
			// Exactly that defect: no other gate trips.
			for _, c := range rep.Checks {
				if c.Verdict != verify.Pass && c.ID != tc.id && !slices.Contains(tc.also, c.ID) {
					t.Errorf("%s also trips %s: %s", tc.name, c.ID, text(c))
				}
			}
			wantExit := session.ExitFailed
			if tc.verdict == verify.Warn && !tc.alsoFails {
				wantExit = session.ExitOK
			}
			if session.ReportCode(rep) != wantExit {
				t.Errorf("exit %d, want %d", session.ReportCode(rep), wantExit)
			}
			// Load-bearing: with the detector off, the defect goes unseen.
			off := run(t, repo, tc.det)
			for _, c := range off.Checks {
				if hasDetector(c, tc.det) {
					t.Errorf("detector %s disabled, still reported: %s", tc.det, text(c))
				}
				if c.ID == tc.id && tc.alone && c.Verdict != verify.Pass {
					t.Errorf("detector %s disabled, %s is still %s: %s", tc.det, c.ID, c.Verdict, text(c))
				}
			}
			if tc.alone && len(tc.also) == 0 && session.ReportCode(off) != session.ExitOK {
				t.Errorf("detector %s disabled: exit %d, want 0:\n%s", tc.det, session.ReportCode(off), dump(off))
			}
		})
	}
}

func TestOptionalAndProtectedPass(t *testing.T) {
	t.Parallel()
	rep := run(t, fixture(t,
		mutation{"clusters/base/apps.yaml", "      - kind: Secret\n        name: app-secrets\n", "      - kind: Secret\n        name: app-secrets\n      - kind: ConfigMap\n        name: ghost-vars\n        optional: true\n"},
		mutation{"apps/namespace.yaml", "", "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: kube-system\n  annotations:\n    kustomize.toolkit.fluxcd.io/prune: disabled\n"}))
	if session.ReportCode(rep) != session.ExitOK || rep.Verdict() != verify.Pass {
		t.Fatalf("optional substituteFrom / protected namespace flagged:\n%s", dump(rep))
	}
}

// otherRepo renders GitRepository flux-system/other, of another
// repository (its URL is not the root source's).
var otherRepo = mutation{"clusters/base/flux-system/gotk-source.yaml", "", "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: other\n  namespace: flux-system\nspec:\n  interval: 1m\n  ref:\n    branch: main\n  url: https://git.example.invalid/other.git\n"}

func TestNotCheckableSkips(t *testing.T) {
	t.Parallel()
	// A Kustomization of another source that substitutes: its path is in
	// another repository, which the controllers read and this check does
	// not. Issue 45 item 4 (this case asserted exit 3 before): what lies
	// outside the repository is a note, not a check that could not run.
	rep := run(t, fixture(t, otherRepo, mutation{"clusters/base/apps.yaml", "    name: flux-system\n  dependsOn:\n    - name: apps", "    name: other\n  dependsOn:\n    - name: apps\n  postBuild:\n    substitute:\n      x: y"}))
	if session.ReportCode(rep) != session.ExitOK {
		t.Fatalf("exit %d, want 0:\n%s", session.ReportCode(rep), dump(rep))
	}
	for _, c := range rep.Checks {
		if hasDetector(c, SourceMissing) {
			t.Fatalf("the rendered source of another repository is no [source-missing]: %s", text(c))
		}
		if c.ID == "check.substitution/flux-system/docs" && (c.Verdict != verify.Skip || !c.Optional || !strings.Contains(c.Message, "reads GitRepository/flux-system/other") || !strings.Contains(c.Message, "a note: its path is in another repository")) {
			t.Fatalf("docs: %s %s (optional %v)", c.Verdict, c.Message, c.Optional)
		}
	}
	// The policy may require it (otherSources: required): exit 3; a value
	// it does not know is an input error naming the line.
	for _, tc := range []struct {
		policy string
		exit   int
		input  string
	}{
		{"version: 1\notherSources: required\n", session.ExitIncomplete, ""},
		{"version: 1\notherSources: note\n", session.ExitOK, ""},
		{"version: 1\notherSources: always\n", 0, `.bootstrap.yaml:2: otherSources "always": note (the default) or required`},
	} {
		repo := fixture(t, otherRepo, mutation{"clusters/base/apps.yaml", "    name: flux-system\n  dependsOn:\n    - name: apps", "    name: other\n  dependsOn:\n    - name: apps"})
		if err := os.WriteFile(filepath.Join(repo, PolicyFile), []byte(tc.policy), 0o600); err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/dev"}})
		if tc.input != "" {
			if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), tc.input) {
				t.Fatalf("%q: err = %v, want %q", tc.policy, err, tc.input)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		rep := verify.NewReport("check")
		rep.Add(r.Checks...)
		if session.ReportCode(rep) != tc.exit {
			t.Fatalf("%q: exit %d, want %d:\n%s", tc.policy, session.ReportCode(rep), tc.exit, dump(rep))
		}
	}
	// Without postBuild nothing is substituted there: the skip is reported
	// but does not make the run incomplete.
	rep = run(t, fixture(t, otherRepo, mutation{"clusters/base/apps.yaml", "    name: flux-system\n  dependsOn:\n    - name: apps", "    name: other\n  dependsOn:\n    - name: apps"}))
	found := false
	for _, c := range rep.Checks {
		if c.ID == "check.substitution/flux-system/docs" {
			found = c.Verdict == verify.Skip && c.Optional
		}
	}
	if !found || session.ReportCode(rep) == session.ExitIncomplete {
		t.Fatalf("a non-substituting Kustomization of another source: want an optional skip, exit not 3 (exit %d):\n%s", session.ReportCode(rep), dump(rep))
	}
	// One reading an ExternalArtifact (an ArtifactGenerator's output, most
	// often over this very repository) is a part of the environment left
	// unread: exit 3, never a silent 0, even without postBuild.
	rep = run(t, fixture(t, mutation{"clusters/base/apps.yaml", "    kind: GitRepository\n    name: flux-system\n  dependsOn:\n    - name: apps", "    kind: ExternalArtifact\n    name: docs\n  dependsOn:\n    - name: apps"}))
	if session.ReportCode(rep) != session.ExitIncomplete {
		t.Fatalf("ExternalArtifact: exit %d, want 3:\n%s", session.ReportCode(rep), dump(rep))
	}
	for _, c := range rep.Checks {
		if c.ID == "check.substitution/flux-system/docs" && (c.Verdict != verify.Skip || c.Optional || !strings.Contains(c.Message, "an ExternalArtifact no ArtifactGenerator of the environment makes")) {
			t.Fatalf("docs: %s %s (optional %v)", c.Verdict, c.Message, c.Optional)
		}
	}
}

// TestUnusedNotJudgedWhenAReaderIsUnread: a knob whose only user sits in
// a path the check did not build is not "unused"; the gate says why.
func TestUnusedNotJudgedWhenAReaderIsUnread(t *testing.T) {
	t.Parallel()
	// web (apps) uses appName; infra's path becomes unbuildable offline
	// (another source), and an extra knob only infra would use is added.
	rep := run(t, fixture(t,
		mutation{"clusters/dev/cluster-vars.yaml", "", "  infraOnly: x\n"}, mutation{"clusters/prod/cluster-vars.yaml", "", "  infraOnly: x\n"},
		mutation{"clusters/base/infrastructure.yaml", "    name: flux-system\n  dependsOn", "    name: other\n  dependsOn"}))
	for _, c := range rep.Checks {
		if c.ID == "check.knobs/ConfigMap/flux-system/cluster-vars" {
			if c.Verdict != verify.Pass || !strings.Contains(text(c), "unused knobs not judged: the paths of flux-system/infra were not built") {
				t.Fatalf("%s: %s", c.Verdict, text(c))
			}
			return
		}
	}
	t.Fatalf("no knobs gate:\n%s", dump(rep))
}

func TestPhaseInputError(t *testing.T) {
	t.Parallel()
	rep := verify.NewReport("check")
	p := &Phase{Options: Options{Options: fluxrepo.Options{Repo: clean, Path: "clusters/nope"}}}
	err := pipeline.Execute(context.Background(), &pipeline.Run{Report: rep}, p)
	if !verify.IsInput(err) || !strings.Contains(err.Error(), "clusters/nope: no such directory") {
		t.Fatalf("want an input error naming the path, got %v", err)
	}
}

func TestPhaseInPipeline(t *testing.T) {
	t.Parallel()
	rep := verify.NewReport("check")
	p := &Phase{Options: Options{Options: fluxrepo.Options{Repo: fixture(t, mutation{"clusters/dev/sync.yaml", "wait: false", "wait: true"}), Path: "clusters/dev"}}}
	if err := pipeline.Execute(context.Background(), &pipeline.Run{Report: rep}, p); err != nil {
		t.Fatal(err)
	}
	if session.ReportCode(rep) != session.ExitFailed || p.Result == nil {
		t.Fatalf("exit %d:\n%s", session.ReportCode(rep), dump(rep))
	}
}

// A substituteFrom key that is not a valid variable name fails every
// substitution of the Kustomization in the controller (its own check).
func TestInvalidVariableName(t *testing.T) {
	t.Parallel()
	rep := run(t, fixture(t,
		mutation{"clusters/dev/cluster-vars.yaml", "", "  bad-key: x\n"},
		mutation{"clusters/prod/cluster-vars.yaml", "", "  bad-key: x\n"}))
	want := "kustomize-controller's substitution fails Kustomization flux-system/infra: post build failed for 'ConfigMap/kube-system/cni-config': envsubst error: 'bad-key' var name is invalid"
	for _, c := range rep.Checks {
		if c.ID == "check.substitution/flux-system/infra" && c.Verdict == verify.Fail && hasFinding(c, ParseError, want) {
			return
		}
	}
	t.Fatalf("want a parse-error finding holding %q in:\n%s", want, dump(rep))
}

// A SOPS-encrypted object in a substituting path: its plaintext is not
// readable here, and the evidence says so.
func TestEncryptedObjectsNamed(t *testing.T) {
	t.Parallel()
	rep := run(t, fixture(t, mutation{"apps/namespace.yaml", "", "---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: web\nstringData:\n  password: ENC[AES256_GCM,data:eA==,iv:aXY=,tag:dGFn,type:str]\nsops:\n  version: 3.9.0\n"}))
	for _, c := range rep.Checks {
		if c.ID == "check.substitution/flux-system/apps" {
			if c.Verdict != verify.Pass || !strings.Contains(text(c), "values not checked: Secret/web/db") {
				t.Fatalf("%s: %s", c.Verdict, text(c))
			}
			return
		}
	}
	t.Fatal("no apps gate")
}

// TestSharedModelThatKeptGoing: up shares sync's model, which keeps going
// past a path that does not build; the check reports that path as the
// [build] failure of its Kustomization, naming the file (issue 38 item 4:
// it was an input error, exit 2, for the whole repository).
func TestSharedModelThatKeptGoing(t *testing.T) {
	t.Parallel()
	repo := fixture(t)
	if err := os.WriteFile(filepath.Join(repo, "apps", "kustomization.yaml"), []byte("resources:\n- web.yaml\n- missing.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := fluxrepo.Options{Repo: repo, Path: "clusters/dev", KeepGoing: true}
	env, err := fluxrepo.Load(o)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), Options{Options: o, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	rep := verify.NewReport("check")
	rep.Add(r.Checks...)
	c := checkOf(rep, "check.render")
	if session.ReportCode(rep) != session.ExitFailed || c.Verdict != verify.Fail || !hasFinding(c, Build, "clusters/base/apps.yaml:1: Kustomization flux-system/apps: kustomize build of spec.path") || !strings.Contains(text(c), "missing.yaml") {
		t.Fatalf("exit %d, want 1 with the [build] failure naming missing.yaml:\n%s", session.ReportCode(rep), dump(rep))
	}
}

// TestSchemaSkipsEncrypted: a SOPS-encrypted Flux object is decrypted by
// kustomize-controller before it is applied, so its ciphertext values and
// its sops field are not judged by the CRD schema.
func TestSchemaSkipsEncrypted(t *testing.T) {
	t.Parallel()
	rep := run(t, fixture(t,
		mutation{"apps/releases.yaml", "  chartRef:\n    kind: OCIRepository\n", "  driftDetection:\n    mode: ENC[AES256_GCM,data:abc=,iv:def=,tag:ghi=,type:str]\n  chartRef:\n    kind: OCIRepository\n"},
		mutation{"apps/releases.yaml", "", "sops:\n  version: 3.9.0\n  mac: ENC[AES256_GCM,data:abc=,iv:def=,tag:ghi=,type:str]\n"}))
	for _, c := range rep.Checks {
		if hasDetector(c, Schema) {
			t.Errorf("an encrypted object was judged by the schema: %s", text(c))
		}
	}
}

// writeApps writes apps/kustomization.yaml of a fixture listing its three
// files and extra entries.
func writeApps(t *testing.T, repo string, extra ...string) {
	t.Helper()
	k := "resources:\n- namespace.yaml\n- releases.yaml\n- web.yaml\n"
	for _, e := range extra {
		k += "- " + e + "\n"
	}
	if err := os.WriteFile(filepath.Join(repo, "apps", "kustomization.yaml"), []byte(k), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestOverReadBound (issue 45 item 7): a manifest over the read bound,
// listed by a kustomization.yaml, is said to be over the bound, with the
// bound and what raises it (nothing), as an [unread] hole of the build
// that lists it: never "open …: no such file or directory". Under the
// bound it is read.
func TestOverReadBound(t *testing.T) {
	t.Parallel()
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: default\ndata:\n  blob: \"" + strings.Repeat("x", 3000) + "\"\n"
	for _, tc := range []struct {
		name  string
		bound int64
		want  verify.Verdict
	}{
		{"over the bound", 2000, verify.Warn},
		{"under the bound", 0, verify.Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := fixture(t)
			writeApps(t, repo, "big.yaml")
			if err := os.WriteFile(filepath.Join(repo, "apps", "big.yaml"), []byte(big), 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/dev", MaxFileBytes: tc.bound}, NoCompare: true})
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			c := checkOf(rep, "check.render")
			if c.Verdict != tc.want || strings.Contains(text(c), "no such file") {
				t.Fatalf("check.render %s, want %s:\n%s", c.Verdict, tc.want, dump(rep))
			}
			want := `apps/kustomization.yaml:5: resources entry "big.yaml" is a file over this tool's read bound: apps/big.yaml is larger than 2000 bytes, so it was left out of the copy and not read (no flag or policy raises the bound, fluxrepo.DefaultMaxFileBytes)`
			if tc.want == verify.Warn && (!hasFinding(c, Unread, want) || !strings.Contains(text(c), "left out of the build of Kustomization flux-system/apps")) {
				t.Fatalf("want an unread finding holding %q:\n%s", want, dump(rep))
			}
		})
	}
}

// TestRepairBounded (issue 45 item 2): a build broken by a few missing
// files is built again without them (one [build] failure naming each),
// at most fluxrepo.MaxRepairs entries; past that it is not built.
func TestRepairBounded(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, fluxrepo.MaxRepairs, fluxrepo.MaxRepairs + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			repo := fixture(t)
			var missing []string
			for i := range n {
				missing = append(missing, fmt.Sprintf("missing-%d.yaml", i))
			}
			writeApps(t, repo, missing...)
			rep := run(t, repo)
			c := checkOf(rep, "check.render")
			if session.ReportCode(rep) != session.ExitFailed || c.Verdict != verify.Fail || !hasFinding(c, Build, "Kustomization flux-system/apps") {
				t.Fatalf("exit %d, want 1 and a [build] failure:\n%s", session.ReportCode(rep), dump(rep))
			}
			repaired := strings.Contains(text(c), "once apps/kustomization.yaml is fixed")
			if repaired != (n <= fluxrepo.MaxRepairs) {
				t.Fatalf("%d missing files: repaired %v:\n%s", n, repaired, dump(rep))
			}
			if repaired && (!strings.Contains(text(c), fmt.Sprintf(`apps/kustomization.yaml:%d: resources entry "missing-%d.yaml" (apps/missing-%d.yaml is not in the repository)`, 4+n, n-1, n-1)) ||
				checkOf(rep, "check.substitution/flux-system/apps").Verdict != verify.Pass) {
				t.Fatalf("want every missing entry named and apps checked:\n%s", dump(rep))
			}
		})
	}
}

// TestRootNamedNothingRenders (issue 45 item 7): a root name nothing
// renders or declares, while the path renders the Kustomization applying
// it, is an input error naming that one (it was taken as a root whose
// source nothing reads: nothing built, exit 3).
func TestRootNamedNothingRenders(t *testing.T) {
	t.Parallel()
	_, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: fixture(t), Path: "clusters/dev", RootName: "cluster"}, NoCompare: true})
	if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), "clusters/dev renders no such Kustomization") || !strings.Contains(err.Error(), "pass --namespace flux-system --root flux-system") {
		t.Fatalf("err = %v", err)
	}
}

// TestRemoteNeverFetched (issue 45 item 1): a remote resource and a remote
// generator file served by a local server are left out, never requested.
func TestRemoteNeverFetched(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: fetched\n"))
	}))
	defer srv.Close()
	repo := fixture(t)
	writeApps(t, repo, srv.URL+"/crds.yaml")
	rep := run(t, repo)
	c := checkOf(rep, "check.render")
	if hits.Load() != 0 || c.Verdict != verify.Warn || !hasFinding(c, Unread, `apps/kustomization.yaml:5: resources entry "`+srv.URL+`/crds.yaml" is a remote file`) {
		t.Fatalf("%d request(s); check.render:\n%s", hits.Load(), dump(rep))
	}
}

// TestFetchRemote (issue 45 item 1): with FetchRemote, a remote file a
// kustomization lists is fetched as kustomize's loader fetches it when
// kustomize-controller builds (one GET, over a local server here, never
// the internet) and checked like the rest — a defect inside it found;
// one that cannot be fetched (404, over the bound, a base that does not
// clone) stays an [unread] hole saying why.
func TestFetchRemote(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".yaml") {
			hits.Add(1)
		}
		switch r.URL.Path {
		case "/ok.yaml":
			_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n  namespace: web\ndata:\n  k: v\n"))
		case "/undefined.yaml":
			_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fetched\n  namespace: web\ndata:\n  k: \"${not_defined_anywhere}\"\n"))
		case "/big.yaml":
			_, _ = w.Write([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\n  namespace: web\ndata:\n  k: \"" + strings.Repeat("x", 2048) + "\"\n"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	for _, tc := range []struct {
		name, entry string
		max         int64
		verdict     verify.Verdict
		want        string
	}{
		{"fetched and checked", srv.URL + "/ok.yaml", 0, verify.Pass, "builds"},
		{"a defect inside it found", srv.URL + "/undefined.yaml", 0, verify.Pass, ""},
		{"not found: a hole saying why", srv.URL + "/missing.yaml", 0, verify.Warn, "--fetch-remote could not fetch it: GET: 404 Not Found"},
		{"over the bound: a hole saying why", srv.URL + "/big.yaml", 1024, verify.Warn, "larger than this tool's read bound"},
		{"a remote base that does not clone: a hole saying why", srv.URL + "/nothing.git//base?ref=v1", 0, verify.Warn, "is a remote base"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := fixture(t)
			writeApps(t, repo, tc.entry)
			o := Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/dev", FetchRemote: true, MaxFileBytes: tc.max}, NoCompare: true}
			r, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			c := checkOf(rep, "check.render")
			if c.Verdict != tc.verdict || !strings.Contains(text(c), tc.want) {
				t.Fatalf("check.render %s, want %s with %q:\n%s", c.Verdict, tc.verdict, tc.want, dump(rep))
			}
			if tc.name == "a defect inside it found" {
				if s := checkOf(rep, "check.substitution/flux-system/apps"); s.Verdict != verify.Fail || !strings.Contains(text(s), "${not_defined_anywhere}") {
					t.Fatalf("the fetched file's undefined variable: %s\n%s", s.Verdict, dump(rep))
				}
			}
		})
	}
	if hits.Load() != 4 {
		t.Fatalf("%d request(s) of a file, want 4 (one per remote file)", hits.Load())
	}
}

// TestFetchRemoteBase (issue 45 item 1): with FetchRemote, a remote base
// (a Git repository spec, ?ref=) is cloned with kustomize's own remote
// loader — from a local Git server here (smart HTTP, git-http-backend),
// never the internet — copied as source-controller archives a repository,
// and built and checked: a defect in it is found. Without FetchRemote it is
// an [unread] hole.
func TestFetchRemoteBase(t *testing.T) {
	if _, err := os.Stat("/usr/lib/git-core/git-http-backend"); err != nil {
		t.Skip("git-http-backend not installed (Debian git)")
	}
	ctx := context.Background()
	s, err := gitserver.Start(t.TempDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	repo, _, err := s.CreateRepo(ctx, "remote", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = repo.Close() })
	if _, err := repo.Commit(ctx, "", map[string]string{
		"base/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - config.yaml\n",
		"base/config.yaml":        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-base\n  namespace: web\ndata:\n  k: \"${not_defined_in_base}\"\n",
	}, "a base"); err != nil {
		t.Fatal(err)
	}
	url := repo.URL + "//base?ref=main"
	for _, tc := range []struct {
		name  string
		fetch bool
		check func(rep *verify.Report) string
	}{
		{"without --fetch-remote: a hole", false, func(rep *verify.Report) string {
			if c := checkOf(rep, "check.render"); c.Verdict != verify.Warn || !hasFinding(c, Unread, "is a remote base") {
				return "want check.render's [unread] remote base"
			}
			return ""
		}},
		{"cloned, built and checked", true, func(rep *verify.Report) string {
			if c := checkOf(rep, "check.render"); c.Verdict != verify.Pass {
				return "want check.render to pass: the base fetched"
			}
			if c := checkOf(rep, "check.substitution/flux-system/apps"); c.Verdict != verify.Fail || !strings.Contains(text(c), "${not_defined_in_base}") {
				return "want the base's undefined variable found"
			}
			return ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixture(t)
			writeApps(t, dir, url)
			r, err := Run(ctx, Options{Options: fluxrepo.Options{Repo: dir, Path: "clusters/dev", FetchRemote: tc.fetch}, NoCompare: true})
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			if msg := tc.check(rep); msg != "" {
				t.Fatalf("%s:\n%s", msg, dump(rep))
			}
		})
	}
}

// The loads of one check take each other's builds (shareBuilds): the
// sibling compared with dev builds the directories both render alike once,
// and the report is the one each load building its own gives — also where
// a Kustomization's spec changes its build in one cluster only (prod's
// apps with a namePrefix: built, not taken).
func TestSharedBuildsSameReport(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		ms   []mutation
	}{
		{name: "as committed"},
		{name: "prod's apps built otherwise", ms: []mutation{{"clusters/prod/kustomization.yaml", "", "patches:\n  - target: {kind: Kustomization, name: apps}\n    patch: |-\n      - op: add\n        path: /spec/namePrefix\n        value: prod-\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := fixture(t, tc.ms...)
			report := func(o fluxrepo.Options) string {
				r, err := Run(context.Background(), Options{Options: o})
				if err != nil {
					t.Fatal(err)
				}
				rep := verify.NewReport("check")
				rep.Add(r.Checks...)
				return dump(rep)
			}
			shared := fluxrepo.NewBuilds()
			got := report(fluxrepo.Options{Repo: repo, Path: "clusters/dev", RecordBuilds: shared, ReuseBuilds: shared})
			own := report(fluxrepo.Options{Repo: repo, Path: "clusters/dev", RecordBuilds: fluxrepo.NewBuilds()})
			if got != own {
				t.Fatalf("with builds shared:\n%s\nwith each load's own:\n%s", got, own)
			}
			if shared.Reused() == 0 {
				t.Fatal("no build taken from another load: want the directories dev and prod build alike built once")
			}
		})
	}
}
