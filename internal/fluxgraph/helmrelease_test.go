package fluxgraph

import (
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hrel is HelmRelease ns/name reading chartRef OCIRepository <name>-chart
// in its namespace, applied by Kustomization flux-system/<by> (labels, as
// kustomize-controller sets them; "" for none), depending on deps ("name"
// or "ns/name").
func hrel(ref, by string, deps ...string) *helmv2.HelmRelease {
	ns, name, _ := strings.Cut(ref, "/")
	hr := &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if by != "" {
		hr.Labels = map[string]string{AppliedByNameLabel: by, AppliedByNamespaceLabel: "flux-system"}
	}
	hr.Spec.ChartRef = &helmv2.CrossNamespaceSourceReference{Kind: "OCIRepository", Name: name + "-chart"}
	for _, d := range deps {
		dns, dname, ok := strings.Cut(d, "/")
		if !ok {
			dns, dname = "", d
		}
		hr.Spec.DependsOn = append(hr.Spec.DependsOn, meta.DependencyReference{Name: dname, Namespace: dns})
	}
	return hr
}

func TestHelmReleaseNodes(t *testing.T) {
	ks := []*kustomizev1.Kustomization{kust("flux-system"), kust("cni", "flux-system"), kust("platform", "cni")}
	for _, tc := range []struct {
		name     string
		hrs      []*helmv2.HelmRelease
		order    string
		prereqs  map[string]string // node -> Prereqs
		levels   map[string]int
		problems string
	}{
		{name: "chain under two appliers",
			hrs: []*helmv2.HelmRelease{
				hrel("kube-system/cilium", "cni"),
				hrel("platform/cert-manager", "platform"),
				// dependsOn without a namespace is the dependent's own
				// (helm-controller's checkDependencies).
				hrel("platform/issuers", "platform", "cert-manager", "kube-system/cilium"),
			},
			order: "flux-system/flux-system,flux-system/cni,flux-system/platform,HelmRelease/kube-system/cilium,HelmRelease/platform/cert-manager,HelmRelease/platform/issuers",
			prereqs: map[string]string{
				"HelmRelease/platform/issuers":   "flux-system/platform,HelmRelease/platform/cert-manager,HelmRelease/kube-system/cilium",
				"HelmRelease/kube-system/cilium": "flux-system/cni",
				"flux-system/platform":           "flux-system/cni",
			},
			levels: map[string]int{"HelmRelease/kube-system/cilium": 2, "HelmRelease/platform/cert-manager": 3, "HelmRelease/platform/issuers": 4}},
		{name: "a HelmRelease without an applier is not a root problem",
			hrs:   []*helmv2.HelmRelease{hrel("apps/web", "")},
			order: "flux-system/flux-system,flux-system/cni,flux-system/platform,HelmRelease/apps/web"},
		{name: "dangling HelmRelease dependsOn",
			hrs:      []*helmv2.HelmRelease{hrel("apps/web", "platform", "db")},
			problems: "HelmRelease/apps/web depends on HelmRelease/apps/db, which is not in the graph"},
		{name: "dependsOn naming a Kustomization",
			hrs:      []*helmv2.HelmRelease{hrel("apps/web", "platform", "flux-system/platform")},
			problems: "HelmRelease/apps/web depends on flux-system/platform, a Kustomization: helm-controller reads a HelmRelease's dependsOn as HelmReleases only"},
		{name: "HelmRelease cycle",
			hrs:      []*helmv2.HelmRelease{hrel("apps/a", "platform", "b"), hrel("apps/b", "platform", "a")},
			problems: "dependsOn has a cycle (circular dependency detected: apps/a -> apps/b -> apps/a)"},
		{name: "chart and chartRef both set",
			hrs: func() []*helmv2.HelmRelease {
				hr := hrel("apps/web", "platform")
				hr.Spec.Chart = &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "web", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: "HelmRepository", Name: "charts"}}}
				return []*helmv2.HelmRelease{hr}
			}(),
			problems: "HelmRelease/apps/web: HelmRelease apps/web: spec.chart and spec.chartRef are mutually exclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithHelmReleases(ks, tc.hrs, root, "flux-system")
			var ps []string
			for _, p := range g.Problems() {
				ps = append(ps, p.String())
			}
			if got := strings.Join(ps, "\n"); tc.problems == "" && got != "" || !strings.Contains(got, tc.problems) {
				t.Fatalf("problems:\n%s\nwant %q", got, tc.problems)
			}
			if tc.order != "" && names(g.Order) != tc.order {
				t.Errorf("order %s\nwant  %s", names(g.Order), tc.order)
			}
			for node, want := range tc.prereqs {
				id, _ := ParseID(node)
				if got := names(g.Prereqs(id)); got != want {
					t.Errorf("Prereqs(%s) = %s, want %s", node, got, want)
				}
			}
			lv := g.Levels()
			for node, want := range tc.levels {
				id, _ := ParseID(node)
				if lv[id] != want {
					t.Errorf("level of %s = %d, want %d", node, lv[id], want)
				}
			}
		})
	}
}

func TestParseIDKinds(t *testing.T) {
	for _, s := range []string{"flux-system/apps", "HelmRelease/kube-system/cilium"} {
		id, ok := ParseID(s)
		if !ok || id.String() != s {
			t.Errorf("ParseID(%q) = %v %v", s, id, ok)
		}
	}
	if id, _ := ParseID("HelmRelease/kube-system/cilium"); !id.IsHelmRelease() || id.Namespace != "kube-system" {
		t.Errorf("HelmRelease ID read as %+v", id)
	}
}
