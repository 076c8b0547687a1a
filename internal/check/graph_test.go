package check

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// TestDependsOnEntrySpelling: the race fix's dependsOn entry, pasted into
// the dependent, names the applier. kustomize-controller v1.9.5 defaults a
// dependsOn entry's empty namespace to the dependent's own
// (checkDependencies), which the graph models: so a cross-namespace applier
// must be spelled with its namespace ("add dependsOn: [{name:
// cluster-apps}]" in apps would fail "dependency not found").
func TestDependsOnEntrySpelling(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, dependentNS string
		applier           fluxgraph.NodeID
		want              string
	}{
		{name: "same namespace: the name alone", dependentNS: "flux-system",
			applier: fluxgraph.NodeID{Namespace: "flux-system", Name: "cluster-apps"}, want: "{name: cluster-apps}"},
		{name: "applier in flux-system, dependent elsewhere: the namespace spelled", dependentNS: "apps",
			applier: fluxgraph.NodeID{Namespace: "flux-system", Name: "cluster-apps"}, want: "{name: cluster-apps, namespace: flux-system}"},
		{name: "applier elsewhere, dependent in flux-system", dependentNS: "flux-system",
			applier: fluxgraph.NodeID{Namespace: "apps", Name: "apps-config"}, want: "{name: apps-config, namespace: apps}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			entry := dependsOnEntry(tc.applier, tc.dependentNS)
			if entry != tc.want {
				t.Fatalf("dependsOnEntry = %q, want %q", entry, tc.want)
			}
			// Paste the fix into the dependent and read it as the graph
			// (the controller's defaulting) does.
			var ref kustomizev1.DependencyReference
			if err := yaml.Unmarshal([]byte(entry), &ref); err != nil {
				t.Fatalf("the fix %q is not a dependsOn entry: %v", entry, err)
			}
			applier := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: tc.applier.Namespace, Name: tc.applier.Name}}
			dep := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: tc.dependentNS, Name: "app"},
				Spec: kustomizev1.KustomizationSpec{DependsOn: []kustomizev1.DependencyReference{ref}}}
			g := fluxgraph.New([]*kustomizev1.Kustomization{applier, dep}, fluxgraph.NodeID{}, "flux-system")
			node := g.Nodes[fluxgraph.ID(dep, "flux-system")]
			if node == nil || len(node.DependsOn) != 1 || node.DependsOn[0] != tc.applier {
				t.Fatalf("the fix %q in %s/app resolves to %v, want %s", entry, tc.dependentNS, node, tc.applier)
			}
		})
	}
}

// TestWaitOrder: [wait-order] on small repositories, one clause each.
// kustomize-controller v1.9.5 checkHealth health-checks every object a
// wait: true Kustomization applies (else only spec.healthChecks, namespace
// as given) and holds a worker meanwhile; helm-controller v1.6.4
// checkDependencies keeps a release DependencyNotReady until every
// dependsOn release is Ready.
func TestWaitOrder(t *testing.T) {
	t.Parallel()
	ks := func(name, path string, wait bool, extra string, deps ...string) string {
		s := fmt.Sprintf("---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: %s\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./%s\n  prune: true\n  wait: %v\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n%s", name, path, wait, extra)
		if len(deps) > 0 {
			s += "  dependsOn:\n"
			for _, d := range deps {
				s += "    - name: " + d + "\n"
			}
		}
		return s
	}
	hr := func(name string, deps ...string) string {
		s := fmt.Sprintf("---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: %s\n  namespace: apps\nspec:\n  interval: 10m\n  chartRef:\n    kind: OCIRepository\n    name: chart\n", name)
		if len(deps) > 0 {
			s += "  dependsOn:\n"
			for _, d := range deps {
				s += "    - name: " + d + "\n"
			}
		}
		return s
	}
	const chart = "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: chart\n  namespace: apps\nspec:\n  interval: 10m\n  url: oci://registry.example.invalid/charts/app\n  ref:\n    tag: 1.0.0\n"
	root := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: https://git.example.invalid/r.git\n  ref:\n    branch: main\n" +
		ks("flux-system", "clusters/dev", false, "") + chart
	healthCheck := func(ns string) string {
		s := "  healthChecks:\n    - apiVersion: helm.toolkit.fluxcd.io/v2\n      kind: HelmRelease\n      name: db\n"
		if ns != "" {
			s += "      namespace: " + ns + "\n"
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		files map[string]string // the root's other Kustomizations, and each path's releases
		want  []string          // "warn: …" or "fail: …" substrings, one per finding
	}{
		{"the dependency in the same apply", map[string]string{"ks.yaml": ks("web", "web", true, ""), "web/r.yaml": hr("web", "db") + hr("db")}, nil},
		{"the applier depended on", map[string]string{"ks.yaml": ks("web", "web", true, "", "db") + ks("db", "db", false, ""), "web/r.yaml": hr("web", "db"), "db/r.yaml": hr("db")}, nil},
		{"the applier depended on transitively", map[string]string{"ks.yaml": ks("web", "web", true, "", "mid") + ks("mid", "mid", false, "", "db") + ks("db", "db", false, ""), "web/r.yaml": hr("web", "db"), "mid/r.yaml": chart, "db/r.yaml": hr("db")},
			nil},
		{"the applier not depended on", map[string]string{"ks.yaml": ks("web", "web", true, "") + ks("db", "db", false, ""), "web/r.yaml": hr("web", "db"), "db/r.yaml": hr("db")},
			[]string{"warn: Kustomization flux-system/web health-checks HelmReleases that need releases Kustomization flux-system/db applies (apps/web needs apps/db), without depending on flux-system/db"}},
		{"the applier waits for it: a deadlock", map[string]string{"ks.yaml": ks("web", "web", true, "") + ks("db", "db", false, "", "web"), "web/r.yaml": hr("web", "db"), "db/r.yaml": hr("db")},
			[]string{"fail: Kustomization flux-system/web health-checks HelmReleases that need releases Kustomization flux-system/db applies (apps/web needs apps/db), and flux-system/db waits for flux-system/web: a deadlock"}},
		{"a dependency through another release", map[string]string{"ks.yaml": ks("web", "web", true, "") + ks("db", "db", false, ""), "web/r.yaml": hr("web", "cache") + hr("cache", "db"), "db/r.yaml": hr("db")},
			[]string{"warn: Kustomization flux-system/web health-checks HelmReleases that need releases Kustomization flux-system/db applies (apps/cache needs apps/db, apps/web needs apps/db)"}},
		{"applied by the Kustomization that applies the dependent", map[string]string{"ks.yaml": ks("db", "db", false, ""), "db/r.yaml": hr("db") + ks("web", "web", true, ""), "web/r.yaml": hr("web", "db")}, nil},
		{"a healthChecks entry naming another's release", map[string]string{"ks.yaml": ks("web", "web", false, healthCheck("apps")) + ks("db", "db", false, ""), "web/r.yaml": chart, "db/r.yaml": hr("db")},
			[]string{"warn: Kustomization flux-system/web health-checks HelmReleases that need releases Kustomization flux-system/db applies (apps/db)"}},
		{"a healthChecks entry without its namespace checks nothing", map[string]string{"ks.yaml": ks("web", "web", false, healthCheck("")) + ks("db", "db", false, ""), "web/r.yaml": chart, "db/r.yaml": hr("db")}, nil},
		{"wait: true ignores healthChecks", map[string]string{"ks.yaml": ks("web", "web", true, healthCheck("apps")) + ks("db", "db", false, ""), "web/r.yaml": chart, "db/r.yaml": hr("db")}, nil},
		{"one finding where a waited Kustomization health-checks the chain", map[string]string{
			"ks.yaml":    ks("web", "web", true, "", "mid") + ks("mid", "mid", true, "") + ks("db", "db", false, ""),
			"web/r.yaml": hr("web", "api"), "mid/r.yaml": hr("api", "db"), "db/r.yaml": hr("db")},
			[]string{"warn: Kustomization flux-system/mid health-checks HelmReleases that need releases Kustomization flux-system/db applies (apps/api needs apps/db)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			files := map[string]string{"clusters/dev/root.yaml": root}
			for rel, c := range tc.files {
				if rel == "ks.yaml" {
					files["clusters/dev/ks.yaml"] = c
					continue
				}
				files[rel] = c
			}
			for rel, c := range files {
				p := filepath.Join(dir, filepath.FromSlash(rel))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env, err := fluxrepo.Load(fluxrepo.Options{Repo: dir, Path: "clusters/dev"})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range waitOrder(env, fluxgraph.FromEnv(env)) {
				got = append(got, string(f.Verdict)+": "+f.Message)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("findings:\n%s\nwant %d", strings.Join(got, "\n"), len(tc.want))
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("finding %d:\n%s\nwant it to contain\n%s", i, got[i], w)
				}
			}
		})
	}
}
