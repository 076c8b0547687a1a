package check

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// A race over instance-patches: Kustomization apps substitutes from the
// ConfigMap staging the root applies, without depending on the root.
var instanceRace = []edit{
	{"clusters/staging/kustomization.yaml", "  - config.yaml\n", "  - config.yaml\n  - apps.yaml\n"},
	{"clusters/staging/apps.yaml", "", `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: apps
  namespace: flux-system
spec:
  interval: 10m
  path: ./apps
  prune: true
  sourceRef:
    kind: OCIRepository
    name: flux-system
  postBuild:
    substituteFrom:
      - kind: ConfigMap
        name: staging
`},
	{"apps/web.yaml", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: default\ndata:\n  env: ${env}\n"},
}

// instanceArgs appends args to the FluxInstance's kustomize-controller
// patch (spec.kustomize.patches, a JSON 6902 add per arg).
func instanceArgs(args ...string) edit {
	const last = "            value: --requeue-dependency=5s\n"
	s := last
	for _, a := range args {
		s += "          - op: add\n            path: /spec/template/spec/containers/0/args/-\n            value: " + a + "\n"
	}
	return edit{"flux/instance.yaml", last, s}
}

// labelStaging labels the ConfigMap the race is over.
func labelStaging(labels string) edit {
	return edit{"clusters/staging/config.yaml", "  namespace: flux-system\n", "  namespace: flux-system\n  labels:\n" + labels}
}

// A race over operator: cluster-apps substitutes from a ConfigMap the
// root (made by the Flux Operator) applies, without depending on it.
var operatorRace = []edit{
	{"kubernetes/flux/cluster/vars.yaml", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: flux-system\ndata:\n  TIMEZONE: Etc/UTC\n"},
	{"kubernetes/flux/cluster/ks.yaml", "      - kind: Secret\n        name: cluster-secrets\n", "      - kind: Secret\n        name: cluster-secrets\n      - kind: ConfigMap\n        name: cluster-settings\n"},
}

// A race over bootstrap: infra-controllers substitutes from a ConfigMap
// the root applies, without depending on it.
var bootstrapRace = []edit{
	{"clusters/staging/cluster-vars.yaml", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n  namespace: flux-system\ndata:\n  cluster_env: staging\n"},
	{"clusters/staging/infrastructure.yaml", "  path: ./infrastructure/controllers\n", "  path: ./infrastructure/controllers\n  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n"},
}

// with is base and more, in a new slice (the cases run in parallel).
func with(base []edit, more ...edit) []edit { return slices.Concat(base, more) }

const ownerNotHelm = "--watch-configs-label-selector=owner!=helm"

// watchCase is one case of TestWatchSelector.
type watchCase struct {
	name, layout, path string
	edits              []edit
	id                 string
	verdict            verify.Verdict
	want               []string // in the check's message or evidence
	found              []wantFinding
}

// raceID is the race check of instanceRace.
const raceID = "check.race/flux-system/apps"

var watchCases = []watchCase{
	{name: "no patch: an unlabelled ConfigMap is not watched", layout: "instance-patches", path: "clusters/staging",
		edits: instanceRace, id: raceID, verdict: verify.Fail,
		found: []wantFinding{{RaceDep, "Kustomization flux-system/apps substitutes from ConfigMap/flux-system/staging (clusters/staging/config.yaml:1), applied by flux-system/flux-system, without depending on it through same-source dependsOn"}}},
	{name: "no patch: the default label, the default text", layout: "instance-patches", path: "clusters/staging",
		edits: with(instanceRace, labelStaging("    reconcile.fluxcd.io/watch: Enabled\n")), id: raceID, verdict: verify.Warn,
		found: []wantFinding{{RaceDep, "without depending on it; it is watched (reconcile.fluxcd.io/watch: Enabled), so a knob added in one commit"}}},
	{name: "FluxInstance owner!=helm: an unlabelled ConfigMap is watched", layout: "instance-patches", path: "clusters/staging",
		edits: with(instanceRace, instanceArgs(ownerNotHelm)), id: raceID, verdict: verify.Warn,
		found: []wantFinding{{RaceDep, "without depending on it; it is watched (it matches --watch-configs-label-selector=owner!=helm set by flux/instance.yaml:17 spec.kustomize), so a knob added in one commit"}}},
	{name: "FluxInstance owner!=helm: the selector is a fact of the release", layout: "instance-patches", path: "clusters/staging",
		edits: with(instanceRace, instanceArgs(ownerNotHelm)), id: "check.flux-release", verdict: verify.Pass,
		want: []string{"kustomize-controller --watch-configs-label-selector=owner!=helm set by flux/instance.yaml:17 spec.kustomize",
			"kustomize-controller --requeue-dependency=5s set by flux/instance.yaml:17 spec.kustomize", "kustomize-controller --concurrent: 4 (the default unless the FluxInstance's cluster.size profile sets it"}},
	{name: "FluxInstance owner!=helm: labelled owner: helm stays a FAIL", layout: "instance-patches", path: "clusters/staging",
		edits: with(instanceRace, instanceArgs(ownerNotHelm), labelStaging("    owner: helm\n")), id: raceID, verdict: verify.Fail,
		want:  []string{"ConfigMap/flux-system/staging is not watched: its labels do not match --watch-configs-label-selector=owner!=helm set by flux/instance.yaml:17 spec.kustomize"},
		found: []wantFinding{{RaceDep, "without depending on it through same-source dependsOn"}}},
	{name: "a selector replaces the default label", layout: "instance-patches", path: "clusters/staging",
		edits: with(instanceRace, instanceArgs("--watch-configs-label-selector=app=web"), labelStaging("    reconcile.fluxcd.io/watch: Enabled\n")), id: raceID, verdict: verify.Fail,
		want: []string{"its labels do not match --watch-configs-label-selector=app=web"}},
	// pflag keeps a string flag's last value.
	{name: "the later flag wins", layout: "instance-patches", path: "clusters/staging",
		edits: with(instanceRace, instanceArgs(ownerNotHelm, "--watch-configs-label-selector=app=web")), id: raceID, verdict: verify.Fail,
		want: []string{"its labels do not match --watch-configs-label-selector=app=web"}},
	{name: "an empty selector watches everything", layout: "instance-patches", path: "clusters/staging",
		edits: with(instanceRace, instanceArgs("--watch-configs-label-selector="), labelStaging("    owner: helm\n")), id: raceID, verdict: verify.Warn,
		found: []wantFinding{{RaceDep, "it is watched (it matches --watch-configs-label-selector= set by flux/instance.yaml:17 spec.kustomize)"}}},
	// kustomize-controller's apply labels every object with the
	// Kustomization applying it (ssa owner labels), and the watch sees them.
	{name: "a selector on the owner labels", layout: "instance-patches", path: "clusters/staging",
		edits: with(instanceRace, instanceArgs("--watch-configs-label-selector=kustomize.toolkit.fluxcd.io/name=flux-system")), id: raceID, verdict: verify.Warn,
		found: []wantFinding{{RaceDep, "it is watched (it matches --watch-configs-label-selector=kustomize.toolkit.fluxcd.io/name=flux-system"}}},
	// main.go: the gate DisableConfigWatchers sets WatchConfigs false.
	{name: "DisableConfigWatchers: the default label is not watched", layout: "instance-patches", path: "clusters/staging",
		edits: with(instanceRace, instanceArgs("--feature-gates=DisableConfigWatchers=true"), labelStaging("    reconcile.fluxcd.io/watch: Enabled\n")), id: raceID, verdict: verify.Fail,
		want: []string{"ConfigMap/flux-system/staging is not watched: kustomize-controller runs with --feature-gates=DisableConfigWatchers=true set by flux/instance.yaml:17 spec.kustomize"}},

	{name: "flux-instance HelmRelease values: no patch, a FAIL", layout: "operator", path: "kubernetes/flux/cluster",
		edits: operatorRace, id: "check.race/flux-system/cluster-apps", verdict: verify.Fail,
		found: []wantFinding{{RaceDep, "Kustomization flux-system/cluster-apps substitutes from ConfigMap/flux-system/cluster-settings (kubernetes/flux/cluster/vars.yaml:1), applied by flux-system/flux-system, without depending on it through same-source dependsOn"}}},
	{name: "flux-instance HelmRelease values: owner!=helm", layout: "operator", path: "kubernetes/flux/cluster",
		edits: with(operatorRace, edit{"kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml", "                value: --requeue-dependency=5s\n",
			"                value: --requeue-dependency=5s\n              - op: add\n                path: /spec/template/spec/containers/0/args/-\n                value: " + ownerNotHelm + "\n"}),
		id: "check.race/flux-system/cluster-apps", verdict: verify.Warn,
		found: []wantFinding{{RaceDep, "it is watched (it matches --watch-configs-label-selector=owner!=helm set by kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml:"}}},
	// The helmfile values are the declaration when no HelmRelease
	// declares this root.
	{name: "flux-instance helmfile values: owner!=helm", layout: "operator", path: "kubernetes/flux/cluster",
		edits: with(operatorRace, edit{"kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml", "path: kubernetes/flux/cluster", "path: kubernetes/flux/other"},
			edit{"bootstrap/helmfile.d/values-flux-instance.yaml", "    path: kubernetes/flux/cluster\n", "    path: kubernetes/flux/cluster\n  kustomize:\n    patches:\n      - patch: |\n          - op: add\n            path: /spec/template/spec/containers/0/args/-\n            value: " + ownerNotHelm + "\n        target:\n          kind: Deployment\n          name: kustomize-controller\n"}),
		id: "check.race/flux-system/cluster-apps", verdict: verify.Warn,
		found: []wantFinding{{RaceDep, "it is watched (it matches --watch-configs-label-selector=owner!=helm set by bootstrap/helmfile.d/values-flux-instance.yaml:"}}},

	{name: "flux bootstrap: no patch, a FAIL", layout: "bootstrap", path: "clusters/staging",
		edits: bootstrapRace, id: "check.race/flux-system/infra-controllers", verdict: verify.Fail,
		found: []wantFinding{{RaceDep, "Kustomization flux-system/infra-controllers substitutes from ConfigMap/flux-system/cluster-vars (clusters/staging/cluster-vars.yaml:1), applied by flux-system/flux-system, without depending on it through same-source dependsOn"}}},
	{name: "flux bootstrap: flux-system/kustomization.yaml patches owner!=helm", layout: "bootstrap", path: "clusters/staging",
		edits: with(bootstrapRace, edit{"clusters/staging/flux-system/kustomization.yaml", "        value: --requeue-dependency=5s\n",
			"        value: --requeue-dependency=5s\n      - op: add\n        path: /spec/template/spec/containers/0/args/-\n        value: " + ownerNotHelm + "\n"}),
		id: "check.race/flux-system/infra-controllers", verdict: verify.Warn,
		found: []wantFinding{{RaceDep, "it is watched (it matches --watch-configs-label-selector=owner!=helm set by clusters/staging/flux-system)"}}},
	// Read and recorded, not judged (kustomize-controller v1.9.5
	// main.go: --concurrent 4, --requeue-dependency 30s,
	// --sops-age-secret "" by default).
	{name: "flux bootstrap: the other flags are facts of the release", layout: "bootstrap", path: "clusters/staging",
		edits: []edit{{"clusters/staging/flux-system/kustomization.yaml", "        value: --requeue-dependency=5s\n",
			"        value: --requeue-dependency=5s\n      - op: add\n        path: /spec/template/spec/containers/0/args/-\n        value: --concurrent=20\n      - op: add\n        path: /spec/template/spec/containers/0/args/-\n        value: --sops-age-secret=sops-age\n"}},
		id: "check.flux-release", verdict: verify.Pass,
		want: []string{"kustomize-controller --watch-configs-label-selector: reconcile.fluxcd.io/watch=Enabled (the default)",
			"kustomize-controller --requeue-dependency=5s set by clusters/staging/flux-system",
			"kustomize-controller --concurrent=20 set by clusters/staging/flux-system",
			"kustomize-controller --sops-age-secret=sops-age set by clusters/staging/flux-system",
			"kustomize-controller --feature-gates=StrictPostBuildSubstitutions=true set by clusters/staging/flux-system"}},
	{name: "flux bootstrap: no patch, the defaults", layout: "bootstrap", path: "clusters/staging",
		edits: []edit{{"clusters/staging/flux-system/kustomization.yaml", "", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gotk-components.yaml\n  - gotk-sync.yaml\n"}},
		id:    "check.flux-release", verdict: verify.Pass,
		want: []string{"kustomize-controller --requeue-dependency: 30s (the default)", "kustomize-controller --concurrent: 4 (the default)"}},
}

// TestWatchSelector: kustomize-controller reconciles the Kustomizations
// reading a ConfigMap or Secret when it changes if the object matches
// --watch-configs-label-selector (kustomize-controller v1.9.5 main.go:
// watchOptions.BindFlags, runtimeCtrl.GetWatchConfigsPredicate(watchOptions),
// passed as KustomizationReconcilerOptions.WatchConfigsPredicate;
// kustomization_manager.go SetupWithManager: WatchesMetadata of ConfigMaps
// and Secrets with that predicate, mapped to the Kustomizations whose
// postBuild.substituteFrom names them). fluxcd/pkg/runtime v0.110.3
// controller/watch.go: the default is reconcile.fluxcd.io/watch=Enabled,
// the selector is parsed with labels.Parse, "" matches everything. A
// watched race is one reconcile wide ([race] warning); an unwatched one is
// a FAIL. The selector is read where the repository sets it: a
// FluxInstance's spec.kustomize.patches, the flux-instance chart's
// instance.kustomize.patches (a HelmRelease's values, a helmfile values
// file), flux bootstrap's flux-system/kustomization.yaml patches.
func TestWatchSelector(t *testing.T) {
	t.Parallel()
	for _, tc := range watchCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := copyLayout(t, tc.layout, tc.edits...)
			r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: tc.path}, NoCompare: true})
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			c := checkOf(rep, tc.id)
			if c.Verdict != tc.verdict {
				t.Fatalf("%s is %s, want %s:\n%s", tc.id, c.Verdict, tc.verdict, dump(rep))
			}
			for _, w := range tc.want {
				if !strings.Contains(text(c), w) {
					t.Errorf("%s lacks %q:\n%s", tc.id, w, dump(rep))
				}
			}
			for _, w := range tc.found {
				if !hasFinding(c, w.det, w.text) {
					t.Errorf("%s lacks %s:\n%s", tc.id, w, dump(rep))
				}
			}
		})
	}
}

// TestWatchSelectorInputError: a selector labels.Parse refuses makes
// kustomize-controller exit at start-up (main.go: "unable to configure
// watch configs label selector for controller"), so check refuses the
// input, naming where it is set and the fix.
func TestWatchSelectorInputError(t *testing.T) {
	t.Parallel()
	repo := copyLayout(t, "instance-patches", with(instanceRace, instanceArgs("--watch-configs-label-selector=owner in (helm"))...)
	_, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/staging"}, NoCompare: true})
	if err == nil || !verify.IsInput(err) {
		t.Fatalf("err = %v, want an input error", err)
	}
	for _, w := range []string{"kustomize-controller's --watch-configs-label-selector=owner in (helm, set by flux/instance.yaml:17 spec.kustomize, is not a label selector",
		"kustomize-controller exits at start-up", "fix the selector there"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("err = %v, want %q", err, w)
		}
	}
}
