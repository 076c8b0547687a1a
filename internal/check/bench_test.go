package check

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/benchshape"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// writer writes files under dir, making their directories.
func writer(tb testing.TB, dir string) func(p, s string) {
	return func(p, s string) {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
}

// benchSync is the generated environments' root and its source.
const benchSync = `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 1m, url: https://git.example.invalid/bench.git, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: flux-system, namespace: flux-system}
spec: {interval: 10m, path: ./clusters/bench, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}
`

// genRepo writes an environment with n Kustomizations, each substituting
// from cluster-vars over perK objects (in a directory without a
// kustomization.yaml, so the generator runs for each).
func genRepo(tb testing.TB, n, perK int) string {
	tb.Helper()
	dir := tb.TempDir()
	write := writer(tb, dir)
	write("clusters/bench/kustomization.yaml", "resources:\n  - sync.yaml\n  - vars.yaml\n  - ks.yaml\n")
	write("clusters/bench/sync.yaml", benchSync)
	write("clusters/bench/vars.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars, namespace: flux-system}\ndata:\n  domain: bench.example.invalid\n  replicas: \"2\"\n  quote: '\"'\n")
	var ks strings.Builder
	for i := range n {
		fmt.Fprintf(&ks, `---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: app-%03d, namespace: flux-system}
spec:
  interval: 10m
  path: ./apps/app-%03d
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  dependsOn: [{name: flux-system}]
  postBuild:
    substituteFrom: [{kind: ConfigMap, name: cluster-vars}]
`, i, i)
		var objs strings.Builder
		for j := range perK {
			fmt.Fprintf(&objs, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%03d, namespace: app-%03d}\ndata:\n  url: \"https://app-%03d.${domain}\"\n  replicas: \"${quote}${replicas}${quote}\"\n  script: |\n    # on ${domain}\n    echo $${HOME}\n", j, i, i)
		}
		write(fmt.Sprintf("apps/app-%03d/objects.yaml", i), objs.String())
	}
	write("clusters/bench/ks.yaml", ks.String())
	return dir
}

func BenchmarkCheck(b *testing.B) {
	repo := genRepo(b, 500, 10)
	o := Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/bench"}, NoCompare: true}
	b.ResetTimer()
	for b.Loop() {
		r, err := Run(context.Background(), o)
		if err != nil {
			b.Fatal(err)
		}
		rep := verify.NewReport("check")
		rep.Add(r.Checks...)
		if session.ReportCode(rep) != session.ExitOK || len(r.Env.Kustomizations) != 501 {
			var s strings.Builder
			_ = verify.WriteText(&s, rep)
			b.Fatalf("exit %d, %d Kustomizations\n%s", session.ReportCode(rep), len(r.Env.Kustomizations), s.String()[:min(4000, s.Len())])
		}
	}
}

// The generated repository is itself checked: clean, then one defect found.
func TestGeneratedRepo(t *testing.T) {
	t.Parallel()
	repo := genRepo(t, 20, 3)
	o := Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/bench"}, NoCompare: true}
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 0 {
		t.Fatalf("findings on the generated repository: %+v", r.Findings)
	}
	p := filepath.Join(repo, "apps/app-007/objects.yaml")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "${replicas}", "${replica}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 1 || r.Findings[0].Gate != "check.substitution/flux-system/app-007" || r.Findings[0].File != "apps/app-007/objects.yaml" || r.Findings[0].Line != 7 {
		t.Fatalf("findings: %+v", r.Findings)
	}
}

// genHomelab writes an environment shaped like the large public homelab
// repositories (DESIGN.md §8): a generated root (no kustomization.yaml) that
// applies cluster-apps; apps/<ns>/kustomization.yaml listing each app's
// ks.yaml; every app Kustomization with a shared component carrying a
// ${VAR:=default}, postBuild.substitute APP and substituteFrom
// cluster-vars (the Kustomizations live in flux-system, beside it); helm apps (HelmRelease + OCIRepository) and plain ones;
// dependsOn chains up to 4 deep within a namespace.
func genHomelab(tb testing.TB, apps, helm int) string {
	tb.Helper()
	dir := tb.TempDir()
	genHomelabIn(tb, dir, apps, helm, false)
	return dir
}

// genHomelabIn is genHomelab into dir. full gives every app what the real
// repositories' apps carry besides (about 1,300 files for 158 apps): an
// app kustomization.yaml with a configMapGenerator of a Grafana dashboard
// (whose ${DS_PROMETHEUS} is Grafana's, not a substitution knob: the
// generated ConfigMap opts out with kustomize.toolkit.fluxcd.io/substitute:
// disabled, as those repositories do), a SOPS-encrypted Secret (the app
// Kustomization decrypts with sops), a Service, a PVC and, every other
// app, a NetworkPolicy.
func genHomelabIn(tb testing.TB, dir string, apps, helm int, full bool) {
	tb.Helper()
	write := writer(tb, dir)
	write("clusters/bench/flux-system/gotk-sync.yaml", benchSync)
	write("clusters/bench/vars.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-vars\n  namespace: flux-system\n  labels: {reconcile.fluxcd.io/watch: Enabled}\ndata:\n  SECRET_DOMAIN: bench.example.invalid\n  TIMEZONE: Etc/UTC\n")
	write("clusters/bench/apps.yaml", `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: cluster-apps, namespace: flux-system}
spec:
  interval: 1h
  path: ./apps
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system}
  dependsOn: [{name: flux-system}]
`)
	write("components/common/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\nresources:\n  - ./settings.yaml\n")
	write("components/common/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${APP}-settings\ndata:\n  capacity: ${CAPACITY:=5Gi}\n  timezone: ${TIMEZONE}\n  host: ${APP}.${SECRET_DOMAIN}\n")
	const perNS = 15
	var nsList strings.Builder
	for i := range apps {
		ns, app := fmt.Sprintf("ns-%02d", i/perNS), fmt.Sprintf("app-%03d", i)
		if i%perNS == 0 {
			fmt.Fprintf(&nsList, "  - ./%s\n", ns)
		}
		dep := "  dependsOn: [{name: flux-system}]\n"
		if i%4 != 0 {
			dep = fmt.Sprintf("  dependsOn: [{name: app-%03d}]\n", i-1)
		}
		capacity := ""
		if i%2 == 0 {
			capacity = "      CAPACITY: 1Gi\n"
		}
		if full {
			dep += "  decryption: {provider: sops, secretRef: {name: sops-age}}\n"
		}
		write(fmt.Sprintf("apps/%s/%s/ks.yaml", ns, app), fmt.Sprintf(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: %[1]s, namespace: flux-system}
spec:
  interval: 1h
  path: ./apps/%[2]s/%[1]s/app
  prune: true
  wait: %[3]v
  targetNamespace: %[2]s
  sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
  components: [../../../../components/common]
%[4]s  postBuild:
    substitute:
      APP: %[1]s
%[5]s    substituteFrom: [{kind: ConfigMap, name: cluster-vars}]
`, app, ns, i%3 == 0, dep, capacity))
		if i < helm {
			write(fmt.Sprintf("apps/%s/%s/app/ocirepository.yaml", ns, app), fmt.Sprintf("apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata: {name: %s}\nspec:\n  interval: 1h\n  url: oci://registry.example.invalid/charts/app-template\n  ref: {tag: 4.0.0}\n  layerSelector: {mediaType: application/vnd.cncf.helm.chart.content.v1.tar+gzip, operation: copy}\n", app))
			write(fmt.Sprintf("apps/%s/%s/app/helmrelease.yaml", ns, app), fmt.Sprintf("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: %[1]s}\nspec:\n  interval: 1h\n  chartRef: {kind: OCIRepository, name: %[1]s}\n  values:\n    controllers:\n      %[1]s:\n        containers:\n          app:\n            image: {repository: ghcr.io/example/%[1]s, tag: 1.0.0}\n            env: {TZ: \"${TIMEZONE}\", HOST: \"%[1]s.${SECRET_DOMAIN}\"}\n", app))
		} else {
			write(fmt.Sprintf("apps/%s/%s/app/deployment.yaml", ns, app), fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: %[1]s}\nspec:\n  selector: {matchLabels: {app: %[1]s}}\n  template:\n    metadata: {labels: {app: %[1]s}}\n    spec:\n      containers:\n        - name: app\n          image: ghcr.io/example/%[1]s:1.0.0\n          env: [{name: TZ, value: \"${TIMEZONE}\"}]\n", app))
		}
		if full {
			genHomelabAppExtras(write, fmt.Sprintf("apps/%s/%s/app/", ns, app), app, i, i < helm)
		}
		if i%perNS == perNS-1 || i == apps-1 {
			var ks strings.Builder
			ks.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
			for j := i - i%perNS; j <= i; j++ {
				fmt.Fprintf(&ks, "  - ./app-%03d/ks.yaml\n", j)
			}
			write(fmt.Sprintf("apps/%s/kustomization.yaml", ns), ks.String())
		}
	}
	write("apps/kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"+nsList.String())
}

// genHomelabAppExtras writes the full shape's extra files of app i into
// the directory prefix (see genHomelabIn).
func genHomelabAppExtras(write func(p, s string), prefix, app string, i int, helm bool) {
	res := []string{"deployment.yaml"}
	if helm {
		res = []string{"ocirepository.yaml", "helmrelease.yaml"}
	}
	res = append(res, "secret.sops.yaml", "service.yaml", "pvc.yaml")
	if i%2 == 0 {
		res = append(res, "networkpolicy.yaml")
		write(prefix+"networkpolicy.yaml", fmt.Sprintf("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: %[1]s}\nspec:\n  podSelector: {matchLabels: {app.kubernetes.io/name: %[1]s}}\n  policyTypes: [Ingress]\n  ingress:\n    - from: [{namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: network}}}]\n      ports: [{port: 8080, protocol: TCP}]\n", app))
	}
	var ks strings.Builder
	ks.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n")
	for _, r := range res {
		fmt.Fprintf(&ks, "  - ./%s\n", r)
	}
	fmt.Fprintf(&ks, `configMapGenerator:
  - name: %s-dashboard
    files: [dashboard.json]
    options:
      labels: {grafana_dashboard: "1"}
      annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}
generatorOptions:
  disableNameSuffixHash: true
`, app)
	write(prefix+"kustomization.yaml", ks.String())
	write(prefix+"dashboard.json", fmt.Sprintf(`{
  "title": "%[1]s",
  "uid": "%[1]s",
  "templating": {"list": [{"name": "DS_PROMETHEUS", "type": "datasource", "query": "prometheus"}]},
  "panels": [
    {"type": "timeseries", "title": "Requests", "datasource": {"type": "prometheus", "uid": "${DS_PROMETHEUS}"},
     "targets": [{"expr": "sum(rate(http_requests_total{app=\"%[1]s\"}[5m]))"}]},
    {"type": "stat", "title": "Up", "datasource": {"type": "prometheus", "uid": "${DS_PROMETHEUS}"},
     "targets": [{"expr": "up{app=\"%[1]s\"}"}]}
  ]
}
`, app))
	write(prefix+"secret.sops.yaml", fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
    name: %[1]s-secret
type: Opaque
data:
    API_KEY: ENC[AES256_GCM,data:q2VjcmV0LWJlbmNoLSVbMV1zLWFwaS1rZXk=,iv:Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MA==,tag:YmVuY2gtdGFnLTAwMDAwMDA=,type:str]
    PASSWORD: ENC[AES256_GCM,data:Ym9ndXMtcGFzc3dvcmQ=,iv:YmFyYmF6cXV4Zm9vMTIzNDU2Nzg5MA==,tag:YmVuY2gtdGFnLTAwMDAwMDE=,type:str]
sops:
    age:
        - recipient: age1qyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqszqgpqyqs3290gq
          enc: |
            -----BEGIN AGE ENCRYPTED FILE-----
            YWdlLWVuY3J5cHRpb24ub3JnL3YxCi0+IFgyNTUxOSBiZW5jaG1hcmsKYmVuY2ht
            YXJrLW5vdC1hLXJlYWwta2V5LWJlbmNobWFyay1ub3QtYS1yZWFsLWtleQotLS0g
            -----END AGE ENCRYPTED FILE-----
    lastmodified: "2026-11-01T10:00:00Z"
    mac: ENC[AES256_GCM,data:bWFjLWJlbmNoLSVbMV1z,iv:bWFjaXZtYWNpdm1hY2l2bWFjaXY=,tag:bWFjdGFnbWFjdGFn,type:str]
    encrypted_regex: ^(data|stringData)$
    version: 3.9.1
`, app))
	write(prefix+"service.yaml", fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata: {name: %[1]s}\nspec:\n  selector: {app.kubernetes.io/name: %[1]s}\n  ports: [{name: http, port: 80, targetPort: 8080}]\n", app))
	write(prefix+"pvc.yaml", fmt.Sprintf("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: %[1]s-data}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n", app))
}

// The homelab-shaped benchmark's size: 160 Kustomizations (the apps, the
// root flux-system and cluster-apps), 110 of the apps HelmReleases — the
// size of the largest public homelab repositories (DESIGN.md §8).
const benchApps, benchHelm = 158, 110

// TestWriteHomelabShape writes BenchmarkCheckHomelabShape's repository
// into $BOOTSTRAP_BENCH_REPO, for measuring the whole command (its peak
// RSS): bootstrap check --repo $BOOTSTRAP_BENCH_REPO --path clusters/bench
// (docs/benchmarks.md). Skipped without the variable. With
// BOOTSTRAP_BENCH_FULL=1 it writes the full shape (genHomelabIn: about
// 1,300 files, generators and SOPS files).
func TestWriteHomelabShape(t *testing.T) {
	dir := os.Getenv("BOOTSTRAP_BENCH_REPO")
	if dir == "" {
		t.Skip("set BOOTSTRAP_BENCH_REPO to a new directory to write the repository there")
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		t.Fatalf("%s is not empty", dir)
	}
	genHomelabIn(t, dir, benchApps, benchHelm, os.Getenv("BOOTSTRAP_BENCH_FULL") == "1")
}

// BenchmarkCheckHomelabShape: check of a repository the size of the
// large homelab ones (160 Kustomizations, 110 HelmReleases, a shared
// component), side by side with every path built by the controller's own
// fluxkustomize.Build one by one (upstream). docs/benchmarks.md.
func BenchmarkCheckHomelabShape(b *testing.B) {
	repo := genHomelab(b, benchApps, benchHelm)
	full := b.TempDir()
	genHomelabIn(b, full, benchApps, benchHelm, true)
	for _, mode := range []struct {
		name     string
		upstream bool
		disable  map[verify.Detector]bool
		full     bool
	}{
		{"check", false, nil, false},
		// The cost of validating every Flux object against the CRDs, side
		// by side (the validators are built once per process either way).
		{"check-without-schema", false, map[verify.Detector]bool{Schema: true}, false},
		{"upstream-builds", true, nil, false},
		// The full shape (~1,300 files: generators, SOPS files).
		{"check-full", false, nil, true},
	} {
		b.Run(mode.name, func(b *testing.B) {
			repo := repo
			if mode.full {
				repo = full
			}
			o := Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/bench", UpstreamBuild: mode.upstream}, NoCompare: true, Disable: mode.disable}
			for b.Loop() {
				r, err := Run(context.Background(), o)
				if err != nil {
					b.Fatal(err)
				}
				rep := verify.NewReport("check")
				rep.Add(r.Checks...)
				if session.ReportCode(rep) != session.ExitOK || len(r.Env.Kustomizations) != benchApps+2 || len(r.Env.HelmReleases) != benchHelm {
					var s strings.Builder
					_ = verify.WriteText(&s, rep)
					b.Fatalf("exit %d, %d Kustomizations, %d HelmReleases\n%s", session.ReportCode(rep), len(r.Env.Kustomizations), len(r.Env.HelmReleases), s.String()[:min(4000, s.Len())])
				}
			}
		})
	}
}

// The homelab-shaped repository is checked clean (warnings only: the
// component default left to apps that do not set CAPACITY), and a typo in
// the shared component fails every app.
// The full shape's Grafana variables (substitution disabled on the
// generated ConfigMap) and SOPS Secrets add no finding.
func TestGeneratedHomelab(t *testing.T) {
	t.Parallel()
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full=%v", full), func(t *testing.T) {
			t.Parallel()
			testGeneratedHomelab(t, full)
		})
	}
}

func testGeneratedHomelab(t *testing.T, full bool) {
	repo := t.TempDir()
	genHomelabIn(t, repo, 12, 8, full)
	o := Options{Options: fluxrepo.Options{Repo: repo, Path: "clusters/bench"}, NoCompare: true}
	r, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	rep := verify.NewReport("check")
	rep.Add(r.Checks...)
	if session.ReportCode(rep) != session.ExitOK || len(r.Env.Kustomizations) != 14 || len(r.Env.HelmReleases) != 8 {
		t.Fatalf("exit %d, %d Kustomizations, %d HelmReleases:\n%s", session.ReportCode(rep), len(r.Env.Kustomizations), len(r.Env.HelmReleases), dump(rep))
	}
	for _, f := range r.Findings {
		if f.Detector != DefaultOp || f.Verdict != verify.Warn || !strings.Contains(f.Message, `CAPACITY is not defined`) {
			t.Fatalf("unexpected finding: %+v", f)
		}
	}
	p := filepath.Join(repo, "components/common/settings.yaml")
	b, _ := os.ReadFile(p)
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "${TIMEZONE}", "${TIMEZON}", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err = Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	fails := 0
	for _, f := range r.Findings {
		if f.Detector == Undefined && f.File == "components/common/settings.yaml" {
			fails++
		}
	}
	if fails != 12 {
		t.Fatalf("want the typo found in all 12 apps, at the component's line: %+v", r.Findings)
	}
}

// BenchmarkCheckRealShape: check of the real-shaped repository
// (internal/benchshape: ~140 Kustomizations, 1,100 files, two clusters
// sharing one apps tree) as `bootstrap check --repo` runs it: every cluster
// root found, each checked and compared with its siblings. Its figure per
// 100 Kustomizations is ns/op × 100 / benchshape.Stats.Kustomizations
// (issue 57). The whole command: TestWrite in internal/benchshape writes
// the same repository into $BOOTSTRAP_BENCH_REPO.
func BenchmarkCheckRealShape(b *testing.B) {
	repo := b.TempDir()
	st, err := benchshape.Write(repo)
	if err != nil {
		b.Fatal(err)
	}
	roots, notes, err := fluxrepo.Discover(repo, fluxrepo.Options{})
	if err != nil || len(roots) != 2 {
		b.Fatalf("roots %v: %v", roots, err)
	}
	for b.Loop() {
		rep := verify.NewReport("check")
		e := &Every{Options: Options{Options: fluxrepo.Options{Repo: repo}}, Roots: roots, Notes: notes}
		if err := pipeline.Execute(context.Background(), &pipeline.Run{Report: rep}, e); err != nil {
			b.Fatal(err)
		}
		if c := checkOf(rep, "kubernetes.flux:check.render"); c.Verdict != verify.Pass || !strings.Contains(c.Message, fmt.Sprintf("%d Kustomization(s), %d built", st.Kustomizations, st.Kustomizations)) {
			b.Fatalf("render: %s", dump(rep))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Seconds())/float64(b.N)*100/float64(st.Kustomizations), "s/100ks")
}
