package check

import (
	"context"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestComponents: testdata/layouts/components (issue #38 items 5, 6, 7),
// as committed (must pass, with one advisory) and with one defect at a
// time.
//
// Names are judged after substitution, as the controllers see them:
// kustomize-controller v1.9.4 (internal/controller/
// kustomization_controller.go, (*KustomizationReconciler).build) runs
// fluxcd/pkg/kustomize.SubstituteVariables over every built object,
// metadata included, before it applies them, so the Component's
// OCIRepository ${APP}-anubis is created as echo-anubis; helm-controller
// v1.6.4 (internal/controller/helmrelease_controller.go, getSource) reads
// spec.chartRef by that name in the HelmRelease's namespace.
//
// knob-env and knob-unused are advisories: no controller compares two
// clusters or reports a ConfigMap key nobody reads. A cluster that never
// renders the readers of a knob is not compared for it.
func TestComponents(t *testing.T) {
	t.Parallel()
	const layout = "components"
	edgeGPU := edit{"clusters/edge/gpu.yaml", "", "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: gpu\n  namespace: flux-system\nspec:\n  interval: 1h\n  dependsOn:\n    - name: flux-system\n  path: ./kubernetes/gpu\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-settings\n"}
	// A second release in the Component, which the first depends on by
	// its ${APP} name (helm-controller v1.6.4 checkDependencies reads it
	// in the dependent's namespace, after substitution).
	withDB := func(dep string) []edit {
		return []edit{
			{"kubernetes/components/chart/kustomization.yaml", "  - ./helmrelease.yaml\n", "  - ./helmrelease.yaml\n  - ./db.yaml\n"},
			{"kubernetes/components/chart/db.yaml", "", "---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: ${APP}-db\nspec:\n  interval: 1h\n  chartRef:\n    kind: OCIRepository\n    name: ${APP}-anubis\n"},
			{"kubernetes/components/chart/helmrelease.yaml", "  interval: 1h\n", "  interval: 1h\n  dependsOn:\n    - name: " + dep + "\n"},
		}
	}
	for _, tc := range []struct {
		name, path string
		edits      []edit
		exit       int
		id         string
		verdict    verify.Verdict
		want       []string
		// found: the findings id must have.
		found []wantFinding
		// absent are texts no check of the run may hold.
		absent []string
		// absentDet are detectors no check of the run may have a finding of.
		absentDet []verify.Detector
		// findings: how many findings of each detector the run reports.
		findings map[verify.Detector]int
	}{
		{name: "main as committed: the ${APP} chart pair resolves", path: "clusters/main", exit: session.ExitOK,
			id: "check.graph", verdict: verify.Pass, want: []string{"2 HelmRelease(s), each dependsOn a rendered HelmRelease, each chart source rendered"},
			absentDet: []verify.Detector{ChartSource}},
		{name: "main as committed: the shared settings judged once across their copies", path: "clusters/main", exit: session.ExitOK,
			id: "check.knobs/ConfigMap/default/app-settings", verdict: verify.Warn,
			found: []wantFinding{{KnobUnused, "kubernetes/components/settings/settings.yaml:12: knob BACKUP_BUCKET of kubernetes/components/settings/settings.yaml (2 copies: ConfigMap/default/app-settings, ConfigMap/media/app-settings)"}},
			// LOG_LEVEL: only media's app uses it, default's copy is not
			// unused for that.
			absent:   []string{"knob LOG_LEVEL", "knob TZ", "knob APP_DOMAIN"},
			findings: map[verify.Detector]int{KnobUnused: 1, KnobEnv: 0}},
		{name: "main as committed: the other copy points at the one report", path: "clusters/main", exit: session.ExitOK,
			id: "check.knobs/ConfigMap/media/app-settings", verdict: verify.Pass,
			want: []string{"one of 2 copies of kubernetes/components/settings/settings.yaml:4", "reported once, on check.knobs/ConfigMap/default/app-settings"}},
		{name: "a knob no reader of any copy uses", path: "clusters/main",
			edits: []edit{{"kubernetes/apps/media/jelly/app/config.yaml", "${LOG_LEVEL}", "debug"}},
			exit:  session.ExitOK, id: "check.knobs/ConfigMap/default/app-settings", verdict: verify.Warn,
			// Still one advisory for the file, naming both.
			found:    []wantFinding{{KnobUnused, "2 knobs of kubernetes/components/settings/settings.yaml (2 copies: ConfigMap/default/app-settings, ConfigMap/media/app-settings) are referenced by none of the Kustomizations substituting from it (default/echo, media/jelly): BACKUP_BUCKET, LOG_LEVEL"}},
			findings: map[verify.Detector]int{KnobUnused: 1}},
		{name: "edge as committed", path: "clusters/edge", exit: session.ExitOK,
			id: "check.graph", verdict: verify.Pass, want: []string{"each chart source rendered"}, findings: map[verify.Detector]int{KnobUnused: 1, KnobEnv: 0}},
		{name: "a knob the other cluster lacks, where it never renders the reader", path: "clusters/main", exit: session.ExitOK,
			id: "check.knobs/ConfigMap/flux-system/cluster-settings", verdict: verify.Pass,
			want: []string{"not compared with clusters/edge: GPU_NODE"}, findings: map[verify.Detector]int{KnobEnv: 0}},
		{name: "a knob the other cluster lacks, where it renders the reader", path: "clusters/main", edits: []edit{edgeGPU},
			exit: session.ExitOK, id: "check.knobs/ConfigMap/flux-system/cluster-settings", verdict: verify.Warn,
			found:    []wantFinding{{KnobEnv, "clusters/main/cluster-settings.yaml:9: knob GPU_NODE of ConfigMap/flux-system/cluster-settings is defined in clusters/main but not in clusters/edge (clusters/edge/cluster-settings.yaml:4), where Kustomization flux-system/gpu reads ${GPU_NODE} too"}},
			findings: map[verify.Detector]int{KnobEnv: 1}},
		{name: "the same, seen from the cluster lacking it", path: "clusters/edge", edits: []edit{edgeGPU},
			// edge renders the default: its substitution check says so.
			exit: session.ExitOK, id: "check.knobs/ConfigMap/flux-system/cluster-settings", verdict: verify.Warn,
			found:    []wantFinding{{KnobEnv, "knob GPU_NODE of ConfigMap/flux-system/cluster-settings is defined in clusters/main (clusters/main/cluster-settings.yaml:9) but not in clusters/edge"}},
			findings: map[verify.Detector]int{KnobEnv: 1, DefaultOp: 1}},
		{name: "a dependsOn named by ${APP}", path: "clusters/main", edits: withDB("${APP}-db"), exit: session.ExitOK,
			id: "check.graph", verdict: verify.Pass, want: []string{"4 HelmRelease(s), each dependsOn a rendered HelmRelease"}},
		{name: "a dependsOn named by ${APP} that nothing renders", path: "clusters/main", edits: withDB("${APP}-dbx"), exit: session.ExitFailed,
			id: "check.graph", verdict: verify.Fail, found: []wantFinding{{Dangling, "HelmRelease default/echo-anubis depends on default/echo-dbx, which the environment does not render"}},
			findings: map[verify.Detector]int{Dangling: 2}},
		// Prune ownership under the substituted name: the Namespace
		// ${GPU_NS:=kube-system} is kube-system on this cluster.
		{name: "a prune: true Kustomization the only declarer of a namespace named by a variable", path: "clusters/main",
			edits: []edit{{"kubernetes/gpu/namespace.yaml", "", "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${GPU_NS:=kube-system}\n"}},
			exit:  session.ExitOK, id: "check.prune-hazard/flux-system/gpu/kube-system", verdict: verify.Warn,
			found: []wantFinding{{Prune, "kubernetes/gpu/namespace.yaml:2: Kustomization flux-system/gpu (prune: true) is the only declarer of Namespace kube-system"}}},
		{name: "a chartRef to a name that does not exist after substitution", path: "clusters/main",
			edits: []edit{{"kubernetes/components/chart/helmrelease.yaml", "    kind: OCIRepository\n    name: ${APP}-anubis\n", "    kind: OCIRepository\n    name: ${APP}-chart\n"}},
			exit:  session.ExitFailed, id: "check.graph", verdict: verify.Fail,
			found:    []wantFinding{{ChartSource, "kubernetes/components/chart/helmrelease.yaml:2: HelmRelease default/echo-anubis reads its chart from OCIRepository/default/echo-chart, which the environment does not render"}},
			findings: map[verify.Detector]int{ChartSource: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := copyLayout(t, layout, tc.edits...)
			r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: tc.path}})
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			if session.ReportCode(rep) != tc.exit {
				t.Fatalf("exit %d, want %d:\n%s", session.ReportCode(rep), tc.exit, dump(rep))
			}
			for det, n := range tc.findings {
				got := 0
				for _, f := range r.Findings {
					if f.Detector == det {
						got++
					}
				}
				if got != n {
					t.Errorf("%d [%s] finding(s), want %d:\n%s", got, det, n, dump(rep))
				}
			}
			found := false
			for _, c := range rep.Checks {
				for _, a := range tc.absent {
					if strings.Contains(text(c), a) {
						t.Errorf("%s holds %q:\n%s", c.ID, a, dump(rep))
					}
				}
				for _, d := range tc.absentDet {
					if hasDetector(c, d) {
						t.Errorf("%s has a [%s] finding:\n%s", c.ID, d, dump(rep))
					}
				}
				if c.ID != tc.id {
					continue
				}
				found = true
				for _, w := range tc.want {
					if c.Verdict != tc.verdict || !strings.Contains(text(c), w) {
						t.Fatalf("want %s %s containing %q; got:\n%s", tc.id, tc.verdict, w, dump(rep))
					}
				}
				for _, w := range tc.found {
					if c.Verdict != tc.verdict || !hasFinding(c, w.det, w.text) {
						t.Fatalf("want %s %s with %s; got:\n%s", tc.id, tc.verdict, w, dump(rep))
					}
				}
			}
			if !found {
				t.Fatalf("no %s:\n%s", tc.id, dump(rep))
			}
		})
	}
}

// TestComponentsModel: the model keys what a Component renders under the
// names the cluster gets (the object index), located in the file that
// declares them with ${APP}.
func TestComponentsModel(t *testing.T) {
	t.Parallel()
	env, err := fluxrepo.Load(fluxrepo.Options{Repo: "../../testdata/layouts/components", Path: "clusters/main"})
	if err != nil {
		t.Fatal(err)
	}
	src := ""
	for _, s := range env.Sources {
		if s.Ref.String() == "OCIRepository/media/jelly-anubis" {
			src = s.Location.String()
		}
	}
	if src != "kubernetes/components/chart/ocirepository.yaml:2" {
		t.Errorf("OCIRepository/media/jelly-anubis at %q, want kubernetes/components/chart/ocirepository.yaml:2", src)
	}
	d := env.Data["ConfigMap/default/echo-config"]
	if d == nil || d.Location.String() != "kubernetes/apps/default/echo/app/config.yaml:2" || d.Values["greeting"] != "hello from echo" {
		t.Errorf("ConfigMap/default/echo-config = %+v, want it as applied, at kubernetes/apps/default/echo/app/config.yaml:2", d)
	}
	for key := range env.Data {
		if strings.Contains(key, "${") {
			t.Errorf("data keyed before substitution: %s", key)
		}
	}
	// The shared settings, as the parent substitutes each copy.
	if d := env.Data["ConfigMap/media/app-settings"]; d == nil || d.Values["APP_DOMAIN"] != "main.example.invalid" {
		t.Errorf("ConfigMap/media/app-settings = %+v, want APP_DOMAIN main.example.invalid", d)
	}
	// Locate finds a name the build substituted in the template declaring it.
	if l := env.Locate(nil, "HelmRelease", "media", "jelly-anubis"); l.String() != "kubernetes/components/chart/helmrelease.yaml:2" {
		t.Errorf("Locate HelmRelease media/jelly-anubis = %s", l)
	}
	if l := env.Locate([]string{"kubernetes/components/chart/helmrelease.yaml"}, "HelmRelease", "media", "jelly-other"); l.File != "kubernetes/components/chart/helmrelease.yaml" {
		// the one HelmRelease among the files read: the older fallback
		t.Errorf("Locate among one file = %s", l)
	}
	if l := env.Locate(nil, "OCIRepository", "media", "jelly-other"); l.File != "" {
		t.Errorf("Locate OCIRepository media/jelly-other = %s, want none: no template matches", l)
	}
}
