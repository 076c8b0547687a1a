package check

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// edit replaces old by new once in file of a layout copy; old and new
// both empty removes the file, old empty with new set writes it.
type edit struct{ file, old, new string }

// copyLayout copies testdata/layouts/name and applies edits.
func copyLayout(t *testing.T, name string, edits ...edit) string {
	t.Helper()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS(filepath.Join("../../testdata/layouts", name))); err != nil {
		t.Fatal(err)
	}
	for _, e := range edits {
		p := filepath.Join(dst, e.file)
		switch {
		case e.old == "" && e.new == "":
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			continue
		case e.old == "":
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(e.new), 0o600); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), e.old) {
			t.Fatalf("%s: %v, or no %q", e.file, err, e.old)
		}
		if err := os.WriteFile(p, []byte(strings.Replace(string(b), e.old, e.new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// The corpus of testdata/layouts (issue #29): one repository of ours per
// layout real Flux repositories use, each checked as committed (must pass)
// and with one defect at a time. The layouts:
//   - bootstrap: flux bootstrap's clusters/<env>/flux-system/{gotk-components,
//     gotk-sync}.yaml with controller patches, no kustomization.yaml at the
//     cluster root or under infrastructure/ (kustomize-controller v1.9.5
//     generates one for every path it builds, the root included);
//   - operator: the root declared by the flux-instance chart's values
//     (instance.sync, Flux Operator), shared components with ${VAR:=default}
//     that apps override, an ExternalSecret-made Secret, an out-of-band one;
//   - fleet: a FluxInstance whose spec.sync is an OCIRepository;
//   - monorepo: ArtifactGenerators over the root's GitRepository (named
//     artifacts, a Merge, a pathPattern), Kustomizations reading the
//     ExternalArtifacts they make (built by source-watcher's copy rules);
//   - remote-root: remote files, bases and generator files in the root and
//     a parent path (issue 45 item 1: holes, not walls);
//   - broken-root: a root and a parent that do not build, a defect below
//     both (issue 45 item 2: a broken build is one failure, never a wall).
func TestLayouts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, layout, path string
		edits              []edit
		// exit is the run's exit code; want are texts of the gate id's
		// message or evidence with that verdict ("" id: none), found the
		// findings it must have.
		exit    int
		id      string
		verdict verify.Verdict
		want    []string
		found   []wantFinding
	}{
		{name: "bootstrap staging as committed", layout: "bootstrap", path: "clusters/staging", exit: session.ExitOK,
			id: "check.graph", verdict: verify.Pass, want: []string{"root flux-system/flux-system (rendered by the root directory) applies clusters/staging; 4 Kustomization(s)"}},
		{name: "bootstrap production as committed", layout: "bootstrap", path: "clusters/production", exit: session.ExitOK,
			id: "check.render", verdict: verify.Pass, want: []string{"compared with environment clusters/staging"}},
		{name: "bootstrap: a HelmRelease dependsOn nothing renders", layout: "bootstrap", path: "clusters/staging",
			edits: []edit{{"apps/base/podinfo/release.yaml", "  interval: 50m\n", "  interval: 50m\n  dependsOn:\n    - name: redis\n"}},
			exit:  session.ExitFailed, id: "check.graph", verdict: verify.Fail,
			found: []wantFinding{{Dangling, "HelmRelease podinfo/podinfo depends on podinfo/redis, which the environment does not render"}}},
		{name: "bootstrap: a knob nothing defines", layout: "bootstrap", path: "clusters/staging",
			edits: []edit{{"clusters/staging/apps.yaml", "  wait: true\n", "  wait: true\n  postBuild:\n    substitute:\n      region: eu\n"},
				{"apps/staging/podinfo-values.yaml", "podinfo.staging.example.invalid", "podinfo.${zone}.example.invalid"}},
			exit: session.ExitFailed, id: "check.substitution/flux-system/apps", verdict: verify.Fail,
			found: []wantFinding{{Undefined, "apps/staging/podinfo-values.yaml:10: ${zone} in HelmRelease/podinfo/podinfo is not defined"}}},

		{name: "operator as committed", layout: "operator", path: "kubernetes/flux/cluster", exit: session.ExitOK,
			id: "check.knobs/Secret/default/cluster-secrets", verdict: verify.Warn,
			found: []wantFinding{{Prerequisite, "prerequisite Secret/default/cluster-secrets (keys SECRET_DOMAIN used) is substituted from by default/echo"}}},
		{name: "operator: the root comes from the flux-instance values", layout: "operator", path: "kubernetes/flux/cluster", exit: session.ExitOK,
			id: "check.graph", verdict: verify.Pass,
			want: []string{"root flux-system/flux-system (declared by the FluxInstance spec.sync at kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml:18"}},
		{name: "operator: a component default overridden is no finding, one left is an advisory", layout: "operator", path: "kubernetes/flux/cluster", exit: session.ExitOK,
			id: "check.substitution/default/echo", verdict: verify.Warn,
			// The component's ${APP} name is shown as the controller applies it.
			want: []string{`so its default "ceph-block" renders here`}, found: []wantFinding{{DefaultOp, `kubernetes/components/volsync/pvc.yaml:11: ${VOLSYNC_STORAGECLASS:=…} in PersistentVolumeClaim/default/echo:`}}},
		{name: "operator: the ExternalSecret's keys define the knobs", layout: "operator", path: "kubernetes/flux/cluster", exit: session.ExitOK,
			id: "check.knobs/Secret/default/echo-env", verdict: verify.Pass,
			want: []string{"2 knob(s) ECHO_REALM, ECHO_TOKEN"}},
		{name: "operator: a shell default in a container script", layout: "operator", path: "kubernetes/flux/cluster",
			edits: []edit{{"kubernetes/apps/default/echo/app/helmrelease.yaml", `"$${ECHO_DEBUG:-}"`, `"${ECHO_DEBUG:-}"`}},
			exit:  session.ExitFailed, id: "check.substitution/default/echo", verdict: verify.Fail,
			want: []string{"escape it as $${ECHO_DEBUG:-…}"}, found: []wantFinding{{DefaultOp, "kubernetes/apps/default/echo/app/helmrelease.yaml:27: ${ECHO_DEBUG:-…} in a script of HelmRelease/default/echo"}}},
		// Issue 38: a path with no root that nothing here depends on is
		// checked as a path whose root is made elsewhere (a note), and
		// [no-root] fails only where a Kustomization waits for the root.
		{name: "operator: no declaration of the root, nothing depends on it", layout: "operator", path: "kubernetes/flux/cluster",
			edits: []edit{{"kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml", "path: kubernetes/flux/cluster", "path: kubernetes/flux/other"},
				{"bootstrap/helmfile.d/values-flux-instance.yaml", "", ""}},
			exit: session.ExitOK, id: "check.graph", verdict: verify.Pass,
			want: []string{"no root here: kubernetes/flux/cluster renders no Kustomization flux-system/flux-system, nothing declares one, and no Kustomization here depends on it", "declare that root with --source-url URL"}},
		{name: "operator: no declaration of the root, a Kustomization depends on it", layout: "operator", path: "kubernetes/flux/cluster",
			edits: []edit{{"kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml", "path: kubernetes/flux/cluster", "path: kubernetes/flux/other"},
				{"bootstrap/helmfile.d/values-flux-instance.yaml", "", ""},
				{"kubernetes/flux/cluster/ks.yaml", "  interval: 1h\n", "  interval: 1h\n  dependsOn:\n    - name: flux-system\n"}},
			exit: session.ExitFailed, id: "check.graph", verdict: verify.Fail,
			want: []string{"but flux-system/cluster-apps depend(s) on it"}, found: []wantFinding{{NoRoot, "kubernetes/flux/cluster renders no root Kustomization flux-system/flux-system and no FluxInstance spec.sync"}}},

		// flux bootstrap's placeholder (issue 38): gotk-sync.yaml committed
		// with no object declares the root flux bootstrap writes there
		// (flux2 pkg/manifestgen/sync.Generate): checked as it applies the
		// path, its dependents satisfied, one note with the --source-url hint.
		{name: "placeholder staging as committed", layout: "placeholder", path: "clusters/staging", exit: session.ExitOK,
			id: "check.graph", verdict: verify.Pass,
			want: []string{"root flux-system/flux-system (written by flux bootstrap into clusters/staging/flux-system/gotk-sync.yaml, a placeholder here: checked as flux bootstrap writes it; declare its real source with --source-url URL, or let bootstrap up/sync --source-kind GitRepository --source-url URL write it) applies clusters/staging; 3 Kustomization(s)"}},
		{name: "placeholder: the note says how to declare the real source", layout: "placeholder", path: "clusters/staging", exit: session.ExitOK,
			id: "check.render", verdict: verify.Pass,
			want: []string{"note: clusters/staging/flux-system/gotk-sync.yaml is flux bootstrap's placeholder", "declare it with --source-url URL (check), or --source-kind GitRepository --source-url URL on bootstrap up/sync", "Kustomization flux-system/flux-system (clusters/staging/flux-system/gotk-sync.yaml) path clusters/staging: 2 object(s)"}},
		{name: "placeholder production as committed, compared with staging", layout: "placeholder", path: "clusters/production", exit: session.ExitOK,
			id: "check.render", verdict: verify.Pass, want: []string{"compared with environment clusters/staging"}},
		{name: "placeholder: a gotk-sync.yaml holding an object is no placeholder", layout: "placeholder", path: "clusters/staging",
			edits: []edit{{"clusters/staging/flux-system/gotk-sync.yaml", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: not-the-root\n  namespace: flux-system\n"}},
			exit:  session.ExitFailed, id: "check.graph", verdict: verify.Fail,
			want: []string{"but flux-system/infrastructure depend(s) on it"}, found: []wantFinding{{NoRoot, "clusters/staging renders no root Kustomization flux-system/flux-system"}}},
		{name: "placeholder: not read by the build", layout: "placeholder", path: "clusters/staging",
			edits: []edit{{"clusters/staging/flux-system/kustomization.yaml", "  - gotk-sync.yaml\n", ""}},
			exit:  session.ExitFailed, id: "check.graph", verdict: verify.Fail,
			found: []wantFinding{{NoRoot, "clusters/staging renders no root Kustomization flux-system/flux-system"}}},
		{name: "placeholder: a real dangling edge still fails", layout: "placeholder", path: "clusters/staging",
			edits: []edit{{"clusters/staging/apps.yaml", "    - name: infrastructure\n", "    - name: infrastructure\n    - name: databases\n"}},
			exit:  session.ExitFailed, id: "check.graph", verdict: verify.Fail,
			found: []wantFinding{{Dangling, "Kustomization flux-system/apps depends on flux-system/databases, which the environment does not render"}}},
		{name: "tenant path with no root", layout: "placeholder", path: "tenants/team-a", exit: session.ExitOK,
			id: "check.graph", verdict: verify.Pass,
			want: []string{"no root here: tenants/team-a renders no Kustomization flux-system/flux-system", "a tenant path, a fleet's ResourceSet", "--source-kind GitRepository --source-url URL create the GitRepository and the Kustomization flux-system/flux-system applying ./tenants/team-a"}},
		{name: "tenant path depending on a root nothing declares", layout: "placeholder", path: "tenants/team-a",
			edits: []edit{{"tenants/team-a/apps.yaml", "  interval: 10m\n", "  interval: 10m\n  dependsOn:\n    - name: flux-system\n      namespace: flux-system\n"}},
			exit:  session.ExitFailed, id: "check.graph", verdict: verify.Fail,
			want: []string{"but team-a/team-a-apps depend(s) on it"}, found: []wantFinding{{NoRoot, "tenants/team-a renders no root Kustomization flux-system/flux-system"}}},

		// One Kustomization that does not build is one failure (issue 38):
		// kustomize-controller v1.9.x (internal/controller/
		// kustomization_controller.go, reconcile) marks a Kustomization
		// whose build fails Ready=False, reason BuildFailed, and returns
		// for that object only; the others are their own reconciles and
		// are applied. broken-build commits two defects in two
		// Kustomizations: both are reported, exit 1.
		{name: "broken-build: a Component under resources: is the [build] failure of its Kustomization", layout: "broken-build", path: "clusters/prod", exit: session.ExitFailed,
			id: "check.render", verdict: verify.Fail,
			found: []wantFinding{{Build, `clusters/prod/apps.yaml:1: Kustomization flux-system/apps: kustomize build of spec.path "./apps" failed:`}},
			want: []string{"expected kind != 'Component' for path 'components/team-labels'",
				"fix: move the directory of the kind: Component kustomization from resources: to components:", "Kustomization flux-system/ingress (clusters/prod/ingress.yaml:1) path infrastructure/ingress: 1 object(s)"}},
		{name: "broken-build: the other Kustomizations are still checked", layout: "broken-build", path: "clusters/prod", exit: session.ExitFailed,
			id: "check.substitution/flux-system/ingress", verdict: verify.Fail,
			found: []wantFinding{{Undefined, "infrastructure/ingress/settings.yaml:8: ${ingress_class} in ConfigMap/flux-system/ingress-settings is not defined"}}},
		// Issue 45 item 2 (this case asserted the wall before: what apps
		// would apply was unknown, so monitoring's dependsOn on databases
		// was a warning): apps is built again without the broken entry,
		// and what it renders (databases) is checked, marked "once
		// apps/kustomization.yaml is fixed".
		{name: "broken-build: what the broken one renders is checked, once its file is fixed", layout: "broken-build", path: "clusters/prod", exit: session.ExitFailed,
			id: "check.render", verdict: verify.Fail,
			want: []string{`built again without apps/kustomization.yaml:6: resources entry "../components/team-labels" (components/team-labels is a kind: Component, which kustomize accepts only under components:): what it renders (Kustomization flux-system/databases) is checked as it would be once apps/kustomization.yaml is fixed`,
				"Kustomization flux-system/databases (apps/databases.yaml:1) path databases: 1 object(s) (checked as it would be once apps/kustomization.yaml is fixed)"}},
		{name: "broken-build: the dependsOn on what the repaired build renders is satisfied", layout: "broken-build", path: "clusters/prod", exit: session.ExitFailed,
			id: "check.graph", verdict: verify.Pass, want: []string{"5 Kustomization(s), no cycle, every dependsOn rendered"}},
		{name: "broken-build: the Component under components:", layout: "broken-build", path: "clusters/prod",
			edits: []edit{{"apps/kustomization.yaml", "  - ../components/team-labels\n", "components:\n  - ../components/team-labels\n"}},
			exit:  session.ExitFailed, id: "check.render", verdict: verify.Pass, want: []string{"5 Kustomization(s), 5 built"}},
		{name: "broken-build: a patch file the commit does not have", layout: "broken-build", path: "clusters/prod",
			edits: []edit{{"apps/kustomization.yaml", "  - ../components/team-labels\n", "components:\n  - ../components/team-labels\npatches:\n  - path: replicas-patch.yaml # scale\n"}},
			exit:  session.ExitFailed, id: "check.render", verdict: verify.Fail,
			found: []wantFinding{{Build, `clusters/prod/apps.yaml:1: Kustomization flux-system/apps: kustomize build of spec.path "./apps" failed`}},
			want: []string{`built again without apps/kustomization.yaml:9: patches entry "replicas-patch.yaml" (apps/replicas-patch.yaml is not in the repository): what it renders (Kustomization flux-system/databases) is checked as it would be once apps/kustomization.yaml is fixed`,
				`fix: commit apps/replicas-patch.yaml, or remove the entry "replicas-patch.yaml" from patches of apps/kustomization.yaml`}},
		// Issue 55 item 5: a file listed but missing in a kustomization
		// file nested below a generated directory (monitoring/ has none;
		// monitoring/observability/ has one listing ./nut-exporter/ks.yaml)
		// breaks the parent's build: built again without the entry, and
		// what is past it checked (a real dangling dependsOn found).
		{name: "broken-build: a nested kustomization lists a missing file", layout: "broken-build", path: "clusters/prod",
			edits: []edit{{"apps/kustomization.yaml", "  - ../components/team-labels\n", "components:\n  - ../components/team-labels\n"},
				{"infrastructure/ingress/settings.yaml", "${ingress_class}", "nginx"},
				{"monitoring/observability/kustomization.yaml", "", "resources:\n  - ./nut-exporter/ks.yaml\n  - ./grafana/ks.yaml\n"},
				{"monitoring/observability/grafana/ks.yaml", "", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: grafana\n  namespace: flux-system\nspec:\n  interval: 10m\n  dependsOn:\n    - name: loki\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  path: ./monitoring/observability/grafana/app\n  prune: true\n"},
				{"monitoring/observability/grafana/app/configmap.yaml", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: grafana\n  namespace: default\n"}},
			exit: session.ExitFailed, id: "check.graph", verdict: verify.Fail,
			found: []wantFinding{{Dangling, "monitoring/observability/grafana/ks.yaml:9: Kustomization flux-system/grafana depends on flux-system/loki, which the environment does not render"}},
		},
		{name: "broken-build: a nested kustomization lists a missing file, the build", layout: "broken-build", path: "clusters/prod",
			edits: []edit{{"monitoring/observability/kustomization.yaml", "", "resources:\n  - ./nut-exporter/ks.yaml\n"}},
			exit:  session.ExitFailed, id: "check.render", verdict: verify.Fail,
			found: []wantFinding{{Build, `Kustomization flux-system/monitoring: kustomize build of spec.path "./monitoring" failed`}},
			want:  []string{`built again without monitoring/observability/kustomization.yaml:2: resources entry "./nut-exporter/ks.yaml" (monitoring/observability/nut-exporter/ks.yaml is not in the repository)`}},
		{name: "broken-build: both defects fixed", layout: "broken-build", path: "clusters/prod",
			edits: []edit{{"apps/kustomization.yaml", "  - ../components/team-labels\n", "components:\n  - ../components/team-labels\n"},
				{"infrastructure/ingress/settings.yaml", "${ingress_class}", "nginx"}},
			exit: session.ExitOK, id: "check.graph", verdict: verify.Pass, want: []string{"5 Kustomization(s), no cycle, every dependsOn rendered"}},
		{name: "broken-build: a path that is not a directory", layout: "broken-build", path: "clusters/prod",
			edits: []edit{{"apps/kustomization.yaml", "  - ../components/team-labels\n", "components:\n  - ../components/team-labels\n"},
				{"infrastructure/ingress/settings.yaml", "${ingress_class}", "nginx"},
				{"clusters/prod/monitoring.yaml", "path: ./monitoring", "path: ./monitor"}},
			exit: session.ExitFailed, id: "check.render", verdict: verify.Fail,
			want: []string{"fix: point spec.path at a directory of the repository"}, found: []wantFinding{{Build, `clusters/prod/monitoring.yaml:1: Kustomization flux-system/monitoring: spec.path "./monitor" is not a directory of the repository: kustomize-controller fails it with 'kustomization path not found'`}}},

		// Issue 45 item 1: what kustomize-controller fetches and this
		// offline check cannot read (a remote file, a remote base, a
		// remote generator file, in the root and in a parent path) is
		// left out of that build, one [unread] warning each, and every
		// Kustomization below is checked. Nothing is fetched (.invalid).
		{name: "remote-root as committed: each remote entry is one warning", layout: "remote-root", path: "clusters/prod", exit: session.ExitOK,
			id: "check.render", verdict: verify.Warn,
			found: []wantFinding{{Unread, `clusters/prod/kustomization.yaml:7: resources entry "https://github.example.invalid/org/project/releases/download/v1.2.3/crds.yaml" is a remote file, which kustomize-controller fetches when it builds and this offline check cannot: left out of the build of Kustomization flux-system/flux-system, so the objects it adds are not checked`},
				{Unread, `clusters/prod/kustomization.yaml:8: resources entry "github.com/example-org/platform//config?ref=v1" is a remote base`},
				{Unread, `clusters/prod/kustomization.yaml:13: configMapGenerator[grafana-dashboards].files entry "nodes.json=https://raw.example.invalid/dashboards/nodes.json" is a remote generator file`},
				{Unread, `apps/monitoring/kustomization.yaml:10: configMapGenerator[app-dashboards].files entry "web.json=https://raw.example.invalid/dashboards/web.json" is a remote generator file`}},
			want: []string{"fix: vendor it into the repository", "Kustomization flux-system/monitoring (clusters/prod/apps.yaml:1) path apps/monitoring: 2 object(s)",
				"Kustomization flux-system/web (apps/monitoring/web.yaml:1) path apps/web: 1 object(s)"}},
		{name: "remote-root: a defect below the remote entries is found", layout: "remote-root", path: "clusters/prod",
			edits: []edit{{"apps/web/configmap.yaml", "${domain}", "${domian}"}},
			exit:  session.ExitFailed, id: "check.substitution/flux-system/web", verdict: verify.Fail,
			found: []wantFinding{{Undefined, "apps/web/configmap.yaml:7: ${domian} in ConfigMap/default/web is not defined"}}},
		// Issue 55 item 3: a generator whose files are all remote and
		// whose files: line ends in a comment is left out without making
		// the file invalid (it was "yaml: line 6: did not find expected key").
		{name: "remote-root: a generator of remote files only, its key commented", layout: "remote-root", path: "clusters/prod",
			edits: []edit{{"apps/monitoring/kustomization.yaml", "    files:\n      - local.json\n", "    files: # TODO vendor the dashboards\n"}},
			exit:  session.ExitOK, id: "check.render", verdict: verify.Warn,
			found: []wantFinding{{Unread, `apps/monitoring/kustomization.yaml:9: configMapGenerator[app-dashboards].files entry "web.json=https://raw.example.invalid/dashboards/web.json" is a remote generator file`}},
			want:  []string{"Kustomization flux-system/web (apps/monitoring/web.yaml:1) path apps/web: 1 object(s)"}},
		{name: "remote-root: vendored, no warning", layout: "remote-root", path: "clusters/prod",
			edits: []edit{{"clusters/prod/kustomization.yaml", "  - https://github.example.invalid/org/project/releases/download/v1.2.3/crds.yaml\n  - github.com/example-org/platform//config?ref=v1\n", ""},
				{"clusters/prod/kustomization.yaml", "nodes.json=https://raw.example.invalid/dashboards/nodes.json", "../../apps/monitoring/local.json"},
				{"apps/monitoring/kustomization.yaml", "      - web.json=https://raw.example.invalid/dashboards/web.json\n", ""}},
			exit: session.ExitOK, id: "check.render", verdict: verify.Pass, want: []string{"3 Kustomization(s), 3 built"}},
		// Issue 45 item 2: a root directory that does not build is the
		// repository's defect (exit 1, the root Kustomization's
		// BuildFailed), not bad input; it is built again without the
		// entry that broke it, and so is apps (an alias with no anchor),
		// so the dangling dependsOn below both is still found.
		{name: "broken-root: the root's [build] failure, with kustomize's words, file:line and fix", layout: "broken-root", path: "clusters/prod", exit: session.ExitFailed,
			id: "check.render", verdict: verify.Fail,
			found: []wantFinding{{Build, "clusters/prod/kustomization.yaml:6: the root directory clusters/prod does not build: kustomize build clusters/prod: accumulating resources: accumulation err='accumulating resources from 'ingress.yaml': open clusters/prod/ingress.yaml: no such file or directory'"},
				{Build, "clusters/prod/apps.yaml:1: Kustomization flux-system/apps: kustomize build of spec.path \"./apps\" failed"}},
			want: []string{"kustomize-controller fails the root Kustomization applying it (BuildFailed)",
				`built again without clusters/prod/kustomization.yaml:6: resources entry "ingress.yaml" (clusters/prod/ingress.yaml is not in the repository): what it renders (Kustomization flux-system/apps) is checked as it would be once clusters/prod/kustomization.yaml is fixed`,
				`fix: commit clusters/prod/ingress.yaml, or remove the entry "ingress.yaml" from resources of clusters/prod/kustomization.yaml`,
				"unknown anchor 'defaults' referenced",
				`apps/kustomization.yaml:5: resources entry "shop-config.yaml"`, "fix: make shop-config.yaml valid YAML",
				"Kustomization flux-system/shop (apps/shop.yaml:1) path apps/shop: 1 object(s) (checked as it would be once apps/kustomization.yaml, clusters/prod/kustomization.yaml is fixed)"}},
		{name: "broken-root: the defect below both walls is found", layout: "broken-root", path: "clusters/prod", exit: session.ExitFailed,
			id: "check.graph", verdict: verify.Warn,
			found: []wantFinding{{Dangling, "apps/shop.yaml:9: Kustomization flux-system/shop depends on flux-system/payments"}}},
		{name: "broken-root: both files fixed, the dangling dependsOn fails", layout: "broken-root", path: "clusters/prod",
			edits: []edit{{"clusters/prod/ingress.yaml", "", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ingress\n"}, {"apps/shop-config.yaml", "data: *defaults", "data: {}"}},
			exit:  session.ExitFailed, id: "check.graph", verdict: verify.Fail,
			found: []wantFinding{{Dangling, "apps/shop.yaml:9: Kustomization flux-system/shop depends on flux-system/payments, which the environment does not render"}}},
		{name: "broken-root: all fixed", layout: "broken-root", path: "clusters/prod",
			edits: []edit{{"clusters/prod/ingress.yaml", "", "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ingress\n"}, {"apps/shop-config.yaml", "data: *defaults", "data: {}"},
				{"apps/shop.yaml", "    - name: payments\n", "    - name: apps\n"}},
			exit: session.ExitOK, id: "check.render", verdict: verify.Pass, want: []string{"3 Kustomization(s), 3 built"}},
		// Issue 45 item 7: a check that built none of its Kustomizations
		// is never a pass.
		{name: "placeholder: a tenant path none of whose Kustomizations builds", layout: "placeholder", path: "tenants/team-a",
			edits: []edit{{"tenants/team-a/apps.yaml", "    name: flux-system\n", "    name: team-a\n"}},
			exit:  session.ExitIncomplete, id: "check.render", verdict: verify.Skip,
			want: []string{"none of the 1 Kustomization(s) of tenants/team-a was built, so nothing they apply was checked"}},

		{name: "fleet prod as committed", layout: "fleet", path: "clusters/prod", exit: session.ExitOK,
			id: "check.graph", verdict: verify.Pass, want: []string{"root flux-system/flux-system (declared by the FluxInstance spec.sync at clusters/prod/flux-system/flux-instance.yaml:18"}},
		{name: "fleet staging as committed", layout: "fleet", path: "clusters/staging", exit: session.ExitOK,
			id: "check.knobs/ConfigMap/flux-system/cluster-vars", verdict: verify.Pass, want: []string{"agree across 1 other environment(s)"}},
		// An advisory (issue #38 item 5), and only where both
		// environments read the knob: the shared apps/ path does.
		{name: "fleet: a knob in one environment only", layout: "fleet", path: "clusters/prod",
			edits: []edit{{"clusters/prod/cluster-vars.yaml", "  cluster_env: prod\n", "  cluster_env: prod\n  web_size: large\n"},
				{"apps/web.yaml", "  url: https://web.${ingress_domain}\n", "  url: https://web.${ingress_domain}\n  size: ${web_size:=small}\n"}},
			exit: session.ExitOK, id: "check.knobs/ConfigMap/flux-system/cluster-vars", verdict: verify.Warn,
			found: []wantFinding{{KnobEnv, "knob web_size of ConfigMap/flux-system/cluster-vars is defined in clusters/prod but not in clusters/staging"}}},
		{name: "fleet: a knob in one environment that the other never reads", layout: "fleet", path: "clusters/prod",
			edits: []edit{{"clusters/prod/cluster-vars.yaml", "  cluster_env: prod\n", "  cluster_env: prod\n  web_size: large\n"}},
			// Unused here too: that advisory only, no [knob-env].
			exit: session.ExitOK, id: "check.knobs/ConfigMap/flux-system/cluster-vars", verdict: verify.Warn,
			want: []string{"not compared with clusters/staging: web_size"}, found: []wantFinding{{KnobUnused, "knob web_size"}}},
		{name: "fleet: a typo in a knob", layout: "fleet", path: "clusters/prod",
			edits: []edit{{"apps/web.yaml", "${ingress_domain}", "${ingress_domian}"}},
			exit:  session.ExitFailed, id: "check.substitution/flux-system/apps", verdict: verify.Fail,
			found: []wantFinding{{Undefined, "apps/web.yaml:12: ${ingress_domian} in ConfigMap/web/web is not defined"}}},

		{name: "monorepo as committed", layout: "monorepo", path: "clusters/prod", exit: session.ExitOK,
			id: "check.render", verdict: verify.Pass, want: []string{"5 Kustomization(s), 5 built, 16 object(s)", "Kustomization flux-system/podinfo (clusters/prod/apps.yaml:16) path .: 1 object(s)"}},
		{name: "monorepo: a knob typo in a pathPattern artifact, located in the repository", layout: "monorepo", path: "clusters/prod",
			edits: []edit{{"apps/podinfo/deployment.yaml", "${podinfo_replicas}", "${podinfo_replica}"}},
			exit:  session.ExitFailed, id: "check.substitution/flux-system/podinfo", verdict: verify.Fail,
			found: []wantFinding{{Undefined, "apps/podinfo/deployment.yaml:6: ${podinfo_replica} in Deployment/apps/podinfo is not defined"}}},
		{name: "monorepo: an artifact copied from a source that is not this repository", layout: "monorepo", path: "clusters/prod",
			edits: []edit{{"clusters/prod/generators.yaml", "          exclude: [\"*.md\"]\n", "          exclude: [\"*.md\"]\n        - from: \"@chart/**\"\n          to: \"@artifact/chart/\"\n"},
				{"clusters/prod/generators.yaml", "      name: flux-system\n  artifacts:", "      name: flux-system\n    - alias: chart\n      kind: OCIRepository\n      name: ingress-chart\n  artifacts:"}},
			exit: session.ExitIncomplete, id: "check.substitution/flux-system/infra-controllers", verdict: verify.Skip,
			want: []string{`made by ArtifactGenerator flux-system/platform (clusters/prod/generators.yaml:2), but its copy operations read source alias "chart", OCIRepository/flux-system/ingress-chart, which is not this repository`}},
		{name: "monorepo: an ExternalArtifact no generator makes", layout: "monorepo", path: "clusters/prod",
			edits: []edit{{"clusters/prod/apps.yaml", "    name: redis\n", "    name: cache\n"}},
			exit:  session.ExitIncomplete, id: "check.substitution/flux-system/redis", verdict: verify.Skip,
			want: []string{"reads ExternalArtifact/flux-system/cache, an ExternalArtifact no ArtifactGenerator of the environment makes"}},
		{name: "monorepo: a generator the API server refuses", layout: "monorepo", path: "clusters/prod",
			edits: []edit{{"clusters/prod/generators.yaml", `originRevision: "@repo"`, `originRevision: "repo"`}},
			exit:  session.ExitFailed, id: "check.substitution/flux-system/flux-system", verdict: verify.Fail,
			found: []wantFinding{{Schema, `clusters/prod/generators.yaml:14: ArtifactGenerator/flux-system/platform is refused by the API server (Flux v2.9.5's CRDs): spec.artifacts[0].originRevision: Invalid value: "repo"`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := copyLayout(t, tc.layout, tc.edits...)
			r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: tc.path}})
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			if session.ReportCode(rep) != tc.exit {
				t.Fatalf("exit %d, want %d:\n%s", session.ReportCode(rep), tc.exit, dump(rep))
			}
			for _, c := range rep.Checks {
				if c.ID != tc.id {
					continue
				}
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
				return
			}
			t.Fatalf("no %s:\n%s", tc.id, dump(rep))
		})
	}
}

// TestLayoutInputErrors: a declared root is held to the input rules before
// anything is checked, and a URL's password never reaches the message.
func TestLayoutInputErrors(t *testing.T) {
	t.Parallel()
	dst := t.TempDir()
	if err := os.CopyFS(dst, os.DirFS("../../testdata/layouts/fleet")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dst, "clusters/prod/flux-system/flux-instance.yaml")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "url: oci://registry.example.invalid/fleet/prod", "url: https://ci:hunter2@registry.example.invalid/fleet/prod", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: dst, Path: "clusters/prod"}, NoCompare: true})
	if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), "clusters/prod/flux-system/flux-instance.yaml:18: FluxInstance spec.sync: the source URL carries a password") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
	for _, s := range []*fluxrepo.Sync{{Kind: "HelmRepository", URL: "https://x"}, {Kind: "GitRepository"}} {
		if _, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: "../../testdata/layouts/bootstrap", Path: "apps/base", Sync: s}, NoCompare: true}); err == nil || !verify.IsInput(err) {
			t.Errorf("%+v: err = %v, want an input error", s, err)
		}
	}
}

// TestArtifactGeneratorFails: an artifact source-watcher cannot make (a
// copy matching nothing: "no files match pattern") is the [build] failure
// of the Kustomization reading it, naming the generator and
// source-watcher's words, as any path that does not build (issue 38: no
// longer an input error for the whole repository).
func TestArtifactGeneratorFails(t *testing.T) {
	t.Parallel()
	repo := copyLayout(t, "monorepo", edit{"clusters/prod/generators.yaml", "@repo/infrastructure/controllers/**", "@repo/infrastructure/controler/**"})
	r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/prod"}})
	if err != nil {
		t.Fatal(err)
	}
	rep := verify.NewReport("check")
	rep.Add(r.Checks...)
	want := `clusters/prod/infrastructure.yaml:1: Kustomization flux-system/infra-controllers: reads ExternalArtifact/flux-system/infra-controllers, which ArtifactGenerator flux-system/platform (clusters/prod/generators.yaml:2) does not make: source-watcher fails it with "infra-controllers build failed: failed to apply copy operations: failed to apply copy operation from '@repo/infrastructure/controler/**' to '@artifact/': no files match pattern 'infrastructure/controler/**' in source 'repo'"`
	if c := checkOf(rep, "check.render"); session.ReportCode(rep) != session.ExitFailed || c.Verdict != verify.Fail || !hasFinding(c, Build, want) {
		t.Fatalf("exit %d, want 1 and check.render with a build finding holding %q:\n%s", session.ReportCode(rep), want, dump(rep))
	}
}

// TestTaskfileSources: in the Taskfile layout (root flux-system/cluster
// reading GitRepository home-kubernetes), a Kustomization reading a
// second GitRepository of this repository (its URL the root source's
// without .git) is built from this checkout and checked as the root's
// are (its undefined ${VAR} fails); one of another URL is another
// repository's (an optional skip, a note); one whose source nothing
// renders is [source-missing].
func TestTaskfileSources(t *testing.T) {
	t.Parallel()
	alt := func(url string) string {
		return "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: home-ops-alt\n  namespace: flux-system\nspec:\n  interval: 30m\n  ref:\n    branch: main\n  url: " + url + "\n"
	}
	const reader = "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: extra\n  namespace: flux-system\nspec:\n  interval: 30m\n  path: ./kubernetes/apps/default/echo/app\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: home-ops-alt\n  postBuild:\n    substitute:\n      ECHO: x\n"
	undefined := edit{"kubernetes/apps/default/echo/app/configmap.yaml", "", "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: default\ndata:\n  v: ${NOT_DEFINED_ANYWHERE}\n"}
	for _, tc := range []struct {
		name   string
		source string // "": not rendered
		id     string
		want   verify.Verdict
		found  wantFinding
		text   string
	}{
		{name: "a second source of this repository", source: alt("https://git.example.invalid/owner/home-ops"),
			// Judged: the bootstrap's install pins Flux v2.4.0, fail open,
			// so the undefined variable is an advisory.
			id: "check.substitution/flux-system/extra", want: verify.Warn, found: wantFinding{Undefined, "${NOT_DEFINED_ANYWHERE} in ConfigMap/default/extra is not defined"}},
		{name: "another repository", source: alt("https://git.example.invalid/owner/other-ops.git"),
			id: "check.substitution/flux-system/extra", want: verify.Skip, text: "a note: its path is in another repository"},
		{name: "nothing renders its source",
			id: "check.graph", want: verify.Fail, found: wantFinding{SourceMissing, "Kustomization flux-system/extra reads GitRepository/flux-system/home-ops-alt, which nothing in the environment renders"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			edits := []edit{{"kubernetes/flux/apps.yaml", "", reader + tc.source}, undefined}
			repo := copyLayout(t, "taskfile", edits...)
			r, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: repo, Path: "kubernetes/flux", RootName: "cluster"}, Disable: map[verify.Detector]bool{RaceDep: true}})
			if err != nil {
				t.Fatal(err)
			}
			rep := verify.NewReport("check")
			rep.Add(r.Checks...)
			c := checkOf(rep, tc.id)
			if c.Verdict != tc.want || tc.found.det != "" && !hasFinding(c, tc.found.det, tc.found.text) || !strings.Contains(text(c), tc.text) {
				t.Fatalf("want %s %s with %v %q:\n%s", tc.id, tc.want, tc.found, tc.text, dump(rep))
			}
			if tc.found.det != SourceMissing && hasDetector(checkOf(rep, "check.graph"), SourceMissing) {
				t.Errorf("a rendered source is [source-missing]:\n%s", dump(rep))
			}
		})
	}
}
