package diff

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/homelab-ops/bootstrap/internal/chartrender"
	"github.com/homelab-ops/bootstrap/internal/sandbox"
	"github.com/homelab-ops/bootstrap/internal/sandbox/registry"
)

// chartRegistry is the sandbox's chart host in-process (TLS under its own
// CA) with our web chart (internal/chartrender/testdata) at 1.0.0 and 1.1.0.
func chartRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	pki, err := sandbox.GeneratePKI(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := registry.Start(pki, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	for _, v := range []string{"1.0.0", "1.1.0"} {
		if _, _, err := r.PushChart(context.Background(), filepath.Join("..", "chartrender", "testdata", "charts", "web"), v); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// webSources are an OCIRepository (trusted through its certSecretRef, the
// registry's CA as the repository renders it) and an https HelmRepository.
func webSources(r *registry.Registry, tag string) string {
	ca := "    " + strings.ReplaceAll(strings.TrimSpace(string(r.CA())), "\n", "\n    ")
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: registry-ca
  namespace: apps
stringData:
  ca.crt: |
%s
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata:
  name: web
  namespace: apps
spec:
  interval: 1h
  url: %s
  ref:
    tag: %s
  certSecretRef:
    name: registry-ca
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
  namespace: apps
spec:
  interval: 1h
  url: %s
  certSecretRef:
    name: registry-ca
`, ca, r.ChartURL("web"), tag, r.HelmRepoURL())
}

const webByRef = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: apps
spec:
  interval: 30m
  chartRef:
    kind: OCIRepository
    name: web
  values:
    password: hunter2-chart
  postRenderers:
    - kustomize:
        patches:
          - target: {kind: Deployment}
            patch: |
              - op: add
                path: /metadata/annotations
                value: {patched: "yes"}
`

const webByChart = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: site
  namespace: apps
spec:
  interval: 30m
  chart:
    spec:
      chart: web
      version: 1.0.0
      sourceRef:
        kind: HelmRepository
        name: charts
  valuesFrom:
    - kind: ConfigMap
      name: site-values
  values:
    image: registry.example/site
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: site-values
  namespace: apps
data:
  values.yaml: |
    replicas: 2
    image: overridden-by-spec-values
`

func TestDiffCharts(t *testing.T) {
	r := chartRegistry(t)
	for _, tc := range []struct {
		name       string
		base, head map[string]string
		noCharts   bool
		want       []string
		wantNot    []string
	}{
		{name: "shared OCIRepository tag 1.0.0 → 1.1.0: the rendered Deployment changes",
			base: map[string]string{"infra/web.yaml": webSources(r, "1.0.0") + "---\n" + webByRef},
			head: map[string]string{"infra/web.yaml": webSources(r, "1.1.0") + "---\n" + webByRef},
			want: []string{
				"=== clusters/dev: chart of HelmRelease apps/web: web 1.0.0 from OCIRepository apps/web",
				"→ web 1.1.0 from OCIRepository apps/web",
				"* Deployment.apps apps/web changed: rollout: the pod template changes",
				"-      - image: registry.example/web:1.0.0", "+      - image: registry.example/web:1.1.0",
				"* Secret apps/web-auth changed: updated", "<redacted: hmac-sha256 "},
			wantNot: []string{"hunter2-chart-1", "chart of HelmRelease apps/site"}},
		{name: "chart version and valuesFrom: Helm's values composition",
			base: map[string]string{"infra/web.yaml": webSources(r, "1.0.0") + "---\n" + webByChart},
			head: map[string]string{"infra/web.yaml": webSources(r, "1.0.0") + "---\n" + strings.NewReplacer("version: 1.0.0", "version: 1.1.x", "replicas: 2", "replicas: 3").Replace(webByChart)},
			want: []string{
				"chart of HelmRelease apps/site: web 1.0.0 from HelmRepository apps/charts", "→ web 1.1.0 from HelmRepository apps/charts",
				"-  replicas: 2", "+  replicas: 3", // valuesFrom
				"+      - image: registry.example/site:1.1.0", // spec.values over valuesFrom
			}},
		{name: "a HelmRelease added: Helm install, the whole chart",
			base: map[string]string{"infra/web.yaml": webSources(r, "1.0.0")},
			head: map[string]string{"infra/web.yaml": webSources(r, "1.0.0") + "---\n" + webByRef},
			want: []string{"chart of HelmRelease apps/web: nothing (Helm install) → web 1.0.0", "* Deployment.apps apps/web added: created",
				"+    patched: \"yes\"", "+    helm.toolkit.fluxcd.io/name: web", "+    helm.toolkit.fluxcd.io/namespace: apps"}, // post-renderers: the patch, the origin labels
			wantNot: []string{"hunter2-chart-1"}}, // the rendered Secret's value
		{name: "a chart that cannot be fetched: a note, not a failure",
			base: map[string]string{"infra/web.yaml": webSources(r, "1.0.0") + "---\n" + webByRef},
			head: map[string]string{"infra/web.yaml": webSources(r, "9.9.9") + "---\n" + webByRef},
			want: []string{"note: head: the chart is not rendered:", "9.9.9"}},
		{name: "a Helm upgrade whose manifests do not change",
			base: map[string]string{"infra/web.yaml": webSources(r, "1.0.0") + "---\n" + webByRef},
			head: map[string]string{"infra/web.yaml": webSources(r, "1.0.0") + "---\n" + strings.Replace(webByRef, "    password: hunter2-chart\n", "    password: hunter2-chart\n    unused: 1\n", 1)},
			want: []string{"Helm upgrade (values)", "chart of HelmRelease apps/web: web 1.0.0", "the rendered manifests do not change"}},
		{name: "no Helm upgrade: no chart rendered",
			base:    map[string]string{"infra/web.yaml": webSources(r, "1.0.0") + "---\n" + webByRef},
			head:    map[string]string{"infra/web.yaml": webSources(r, "1.0.0") + "---\n" + strings.Replace(webByRef, "interval: 30m", "interval: 30m\n  timeout: 9m", 1)},
			want:    []string{"no Helm upgrade from them"},
			wantNot: []string{"chart of HelmRelease"}},
		{name: "without --charts nothing is fetched",
			base:     map[string]string{"infra/web.yaml": webSources(r, "1.0.0") + "---\n" + webByRef},
			head:     map[string]string{"infra/web.yaml": webSources(r, "1.1.0") + "---\n" + webByRef},
			noCharts: true,
			wantNot:  []string{"chart of HelmRelease"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := twoCommits(t, tc.base, tc.head)
			o := Options{Repo: repo, Base: "HEAD~1", Head: "HEAD", FluxVersion: "v2.9.5"}
			if !tc.noCharts {
				o.Charts = &chartrender.Options{Timeout: 20 * time.Second}
			}
			res, err := Run(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			var out, js bytes.Buffer
			if err := WriteText(&out, res); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&js, res); err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("want %q in:\n%s", w, out.String())
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(out.String(), w) || strings.Contains(js.String(), w) {
					t.Errorf("do not want %q in the text or JSON output:\n%s", w, out.String())
				}
			}
			if res.Failed() {
				t.Errorf("Failed() = true:\n%s", out.String())
			}
			if testing.Verbose() {
				t.Log(out.String())
			}
		})
	}
}
