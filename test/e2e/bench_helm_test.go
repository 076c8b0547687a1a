//go:build e2e

package e2e

// BenchmarkConvergeHomelabShape is issue #28's benchmark: a graph shaped
// like a real homelab repository — 80 Kustomizations and 70 HelmReleases,
// each release with its own OCIRepository chart, dependsOn chains across
// both kinds — brought up on the suite's sandbox four ways, side by side in
// one run:
//
//	controllers             the controllers alone (30 s --requeue-dependency), observed by `sync --nudge=false`
//	converge                `bootstrap sync` (converge nudges)
//	requeue-5s              --requeue-dependency=5s on kustomize- and helm-controller, observed the same way
//	converge-concurrent-20  `bootstrap sync` with --concurrent=20 on both controllers
//
// Each reports the wall time until every node converged against two floors
// from the controllers' own reconcile times (their metrics): the sum along
// the critical path converge reports, and the busier controller's total
// over its --concurrent. Run:
//
//	go test -tags e2e -run '^$' -bench ConvergeHomelabShape -benchtime 1x -timeout 60m ./test/e2e
//
// It asserts nothing about time (a benchmark): it fails only when a mode
// does not converge, or when check.graph does not pass on the generated
// repository. The Kustomizations' timeout is 15m, so a stall shows as one.

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// benchShape is the generated repository's shape.
var benchShape = struct{ infra, platform, apps int }{10, 30, 40}

var benchNamespaces = []string{"bench-infra", "bench-platform", "bench-apps"}

// writeBenchRepo writes the repository: tiers infra (wait: false, a
// ConfigMap each), platform (wait: true: Ready only once its HelmRelease
// is) and apps (wait: false), each Kustomization depending on one of the
// tier before; platform releases chain in three steps of ten, and so do
// their Kustomizations (check's [wait-order]), each apps release depends on
// a platform one.
func writeBenchRepo(t testing.TB, dir, gitURL, regHost string) {
	t.Helper()
	files := map[string]string{
		"clusters/dev/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - sync.yaml\n  - source.yaml\n  - cluster-vars.yaml\n  - tiers.yaml\n",
		"clusters/dev/sync.yaml":          "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./clusters/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
		"clusters/dev/source.yaml":        fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  url: %s\n  ref:\n    branch: main\n", gitURL),
		"clusters/dev/cluster-vars.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n  namespace: flux-system\ndata:\n  domain: bench.example.invalid\n",
	}
	var tiers strings.Builder
	ks := func(name string, wait bool, deps ...string) {
		var d strings.Builder
		for _, dep := range deps {
			fmt.Fprintf(&d, "    - name: %s\n", dep)
		}
		fmt.Fprintf(&tiers, "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: %s\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./bench/%s\n  prune: true\n  wait: %v\n  timeout: 15m\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  dependsOn:\n%s  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: cluster-vars\n", name, name, wait, d.String())
	}
	release := func(ns, name, dep, depNS string) string {
		s := fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: %s-chart\n  namespace: %s\nspec:\n  interval: 10m\n  url: oci://%s/charts/app\n  ref:\n    tag: 1.0.0\n  certSecretRef:\n    name: sandbox-ca\n  layerSelector:\n    mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip\n    operation: copy\n---\n", name, ns, regHost)
		s += fmt.Sprintf("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  interval: 10m\n  chartRef:\n    kind: OCIRepository\n    name: %s-chart\n  values:\n    host: \"%s.${domain}\"\n", name, ns, name, name)
		if dep != "" {
			s += fmt.Sprintf("  dependsOn:\n    - name: %s\n      namespace: %s\n", dep, depNS)
		}
		return s
	}
	cm := func(ns, name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  host: \"%s.${domain}\"\n", name, ns, name)
	}
	for i := range benchShape.infra {
		n := fmt.Sprintf("infra-%02d", i)
		ks(n, false, "flux-system")
		files["bench/"+n+"/config.yaml"] = cm("bench-infra", n)
	}
	for i := range benchShape.platform {
		n := fmt.Sprintf("platform-%02d", i)
		deps := []string{fmt.Sprintf("infra-%02d", i%benchShape.infra)}
		dep := ""
		if i >= 10 {
			// The Kustomization depends on the one applying its release's
			// dependency, as homelab repositories write it: its wait: true
			// health check would otherwise hold a kustomize-controller
			// worker until that release is applied and Ready, and with all
			// workers held so nothing applies it (check's [wait-order];
			// seen here as a stall until the 15m timeout).
			dep = fmt.Sprintf("platform-%02d", i-10)
			deps = append(deps, dep)
		}
		ks(n, true, deps...)
		files["bench/"+n+"/release.yaml"] = release("bench-platform", n, dep, "bench-platform")
	}
	for i := range benchShape.apps {
		n := fmt.Sprintf("apps-%02d", i)
		ks(n, false, fmt.Sprintf("platform-%02d", i%benchShape.platform))
		files["bench/"+n+"/release.yaml"] = release("bench-apps", n, fmt.Sprintf("platform-%02d", 20+i%10), "bench-platform")
	}
	files["clusters/dev/tiers.yaml"] = tiers.String()
	writeFiles(t, dir, files)
}

// writeFiles writes files (slash-separated path → content) under dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

var durationRe = regexp.MustCompile(`\((\d+(?:\.\d+)?)s\)`)

// criticalWork sums the eligible→converged times of the nodes on the
// critical path the report names.
func criticalWork(facts map[string]string) (float64, error) {
	cp := facts["converge.critical-path"]
	if cp == "" {
		return 0, fmt.Errorf("no critical path in the report")
	}
	cp = strings.TrimSpace(cp[:strings.LastIndex(cp, " (")])
	var sum float64
	for _, id := range strings.Split(cp, " → ") {
		m := durationRe.FindStringSubmatch(facts["converge.timeline."+id])
		if m == nil {
			return 0, fmt.Errorf("no timeline for %s: %q", id, facts["converge.timeline."+id])
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		sum += v
	}
	return sum, nil
}

// ownReconcile is, by converge's node id ("ns/name" for a Kustomization,
// "HelmRelease/ns/name"), the seconds kustomize- and helm-controller spent
// reconciling each object: the sum of its gotk_reconcile_duration_seconds
// histogram (fluxcd/pkg/runtime's recorder, observed once per reconcile in
// each controller's Reconcile), read from the controllers' own metrics.
func ownReconcile(ctx context.Context) (map[string]float64, error) {
	out := map[string]float64{}
	for _, c := range []string{"kustomize-controller", "helm-controller"} {
		addr := suite.runner.Status().Instances[c].MetricsAddr
		if addr == "" {
			return nil, fmt.Errorf("%s runs with no metrics address", c)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("%s metrics: %w", c, err)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("%s metrics: %w", c, err)
		}
		for _, m := range fams["gotk_reconcile_duration_seconds"].GetMetric() {
			l := map[string]string{}
			for _, p := range m.GetLabel() {
				l[p.GetName()] = p.GetValue()
			}
			id := l["namespace"] + "/" + l["name"]
			if l["kind"] != "Kustomization" {
				id = l["kind"] + "/" + id
			}
			out[id] += m.GetHistogram().GetSampleSum()
		}
	}
	return out, nil
}

// ownCritical sums, along the critical path the report names, the
// controllers' own reconcile time of each node between two readings.
// The breakdown names each node's own time beside its converge timeline.
func ownCritical(facts map[string]string, before, after map[string]float64) (float64, string, error) {
	cp := facts["converge.critical-path"]
	if cp == "" {
		return 0, "", fmt.Errorf("no critical path in the report")
	}
	var sum float64
	var parts []string
	for _, id := range strings.Split(strings.TrimSpace(cp[:strings.LastIndex(cp, " (")]), " → ") {
		d, ok := after[id]
		if !ok {
			return 0, "", fmt.Errorf("no reconcile duration for %s in the controllers' metrics", id)
		}
		sum += d - before[id]
		parts = append(parts, fmt.Sprintf("%s: own %.1fs, timeline %s", id, d-before[id], facts["converge.timeline."+id]))
	}
	return sum, strings.Join(parts, "; "), nil
}

// capacityFloor is the controllers' own reconcile time between two
// readings, of every Kustomization and of every HelmRelease, divided by that
// controller's --concurrent (4 by default in kustomize-controller v1.9.5 and
// helm-controller v1.6.4, main.go): no order of the reconciles finishes
// before the busier controller's workers are through; the larger of the two.
func capacityFloor(before, after map[string]float64) float64 {
	busy := map[string]float64{}
	for id, d := range after {
		c := "kustomize-controller"
		if strings.HasPrefix(id, "HelmRelease/") {
			c = "helm-controller"
		}
		busy[c] += d - before[id]
	}
	floor := 0.0
	for c, t := range busy {
		n := 4.0
		for _, a := range suite.runner.Status().Instances[c].Args {
			if v, ok := strings.CutPrefix(a, "--concurrent="); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
					n = f
				}
			}
		}
		floor = max(floor, t/n)
	}
	return floor
}

func BenchmarkConvergeHomelabShape(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	if suite.registry == nil {
		b.Fatal("the suite's sandbox has no chart registry")
	}
	ensureFlux(b)
	if _, _, err := suite.registry.PushChart(ctx, filepath.Join(suite.root, "testdata", "charts", "app"), "1.0.0"); err != nil {
		b.Fatal(err)
	}
	name := freshRepoName("bench")
	dir := b.TempDir()
	writeBenchRepo(b, dir, suite.git.URL+"/"+name+".git", suite.registry.Host())
	repo, _, err := suite.git.CreateRepo(ctx, name, dir)
	if err != nil {
		b.Fatal(err)
	}
	defer repo.Close()
	shipped, err := os.ReadFile(filepath.Join(suite.root, "overlays", "strict-substitution.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	// overlay writes an overlay dir: the shipped strict overlay plus arg
	// appended to kustomize- and helm-controller.
	overlay := func(arg string) string {
		dir := b.TempDir()
		kz := "patches:\n  - path: strict-substitution.yaml\n    target: {kind: Deployment, name: kustomize-controller}\n"
		for _, c := range []string{"kustomize-controller", "helm-controller"} {
			kz += "  - target: {kind: Deployment, name: " + c + "}\n    patch: |\n      - op: add\n        path: /spec/template/spec/containers/0/args/-\n        value: " + arg + "\n"
		}
		for n, c := range map[string]string{"kustomization.yaml": kz, "strict-substitution.yaml": string(shipped)} {
			if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o644); err != nil {
				b.Fatal(err)
			}
		}
		return dir
	}
	requeue, concurrent := overlay("--requeue-dependency=5s"), overlay("--concurrent=20")
	// converge-concurrent-20: the controllers with the worker count
	// homelab repositories set (DESIGN §8), so that their capacity is not
	// the floor and converge meets the critical path itself.
	for _, mode := range []struct {
		name     string
		overlays string
		nudge    bool
	}{{"controllers", "", false}, {"converge", "", true}, {"requeue-5s", requeue, false}, {"converge-concurrent-20", concurrent, true}} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				if err := removeFixtures(ctx); err != nil {
					b.Fatal(err)
				}
				args := []string{"controllers", "--flux-version", "v2.9.5", "--timeout", "3m"}
				if mode.overlays != "" {
					args = append(args, "--overlays", mode.overlays)
				}
				if r := bootstrapJSON(b, args...); r.code != 0 {
					b.Fatalf("controllers: %s", r)
				}
				// A changed template restarts the local controllers (new
				// metrics addresses): read them once they run from it.
				suite.waitRunning(ctx, b, "kustomize-controller")
				suite.waitRunning(ctx, b, "helm-controller")
				for _, ns := range benchNamespaces {
					err := suite.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
					if err != nil && !apierrors.IsAlreadyExists(err) {
						b.Fatal(err)
					}
					if err := suite.registry.EnsureCASecret(ctx, suite.client, ns, "sandbox-ca"); err != nil {
						b.Fatal(err)
					}
				}
				before, err := ownReconcile(ctx)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				r := bootstrapJSON(b, "sync", "--repo", dir, "--env", "dev", "--timeout", "15m", "--fail-after", "5m", fmt.Sprintf("--nudge=%v", mode.nudge))
				b.StopTimer()
				if r.code != 0 {
					b.Fatalf("sync --nudge=%v: exit %d\n%s", mode.nudge, r.code, r)
				}
				if g := r.report.check("check.graph"); !strings.HasPrefix(g, "pass") {
					b.Fatalf("the generated repository is not one check passes: %s", g)
				}
				d, err := time.ParseDuration(r.report.Facts["converge.duration"])
				if err != nil {
					b.Fatal(err)
				}
				work, err := criticalWork(r.report.Facts)
				if err != nil {
					b.Fatal(err)
				}
				after, err := ownReconcile(ctx)
				if err != nil {
					b.Fatal(err)
				}
				own, breakdown, err := ownCritical(r.report.Facts, before, after)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(d.Seconds(), "converge-s")
				b.ReportMetric(work, "critical-work-s")
				b.ReportMetric(d.Seconds()/work, "x-critical")
				b.ReportMetric(own, "own-critical-s")
				b.ReportMetric(d.Seconds()/own, "x-own-critical")
				capacity := capacityFloor(before, after)
				b.ReportMetric(capacity, "capacity-floor-s")
				b.ReportMetric(d.Seconds()/max(own, capacity), "x-floor")
				b.ReportMetric(r.maxRSSMiB, "peak-RSS-MiB")
				nudges, _ := strconv.Atoi(r.report.Facts["converge.nudges"])
				b.ReportMetric(float64(nudges), "nudges")
				b.Logf("%s: %s nodes, converge %s, critical path %s (work %.1fs, the controllers' own reconcile time along it %.1fs), nudges %d", mode.name,
					r.report.Facts["converge.nodes"], d, r.report.Facts["converge.critical-path"], work, own, nudges)
				b.Logf("%s: along the critical path: %s", mode.name, breakdown)
			}
		})
	}
	b.StopTimer()
	if err := removeFixtures(ctx); err != nil {
		b.Fatal(err)
	}
	if r := bootstrapJSON(b, "controllers", "--flux-version", "v2.9.5", "--timeout", "3m"); r.code != 0 {
		b.Fatalf("controllers (restore): %s", r)
	}
}
