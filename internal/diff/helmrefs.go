package diff

import (
	"fmt"
	"slices"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

// helmReleases are the HelmReleases of every Kustomization's render at
// one side, as applied (substituted), sorted by namespace/name.
func helmReleases(rend map[string]*rendered) []*helmv2.HelmRelease {
	var out []*helmv2.HelmRelease
	seen := map[string]bool{}
	for _, r := range rend {
		for k, u := range r.objs {
			if k.Group != helmGroup || k.Kind != "HelmRelease" || seen[k.Namespace+"/"+k.Name] {
				continue
			}
			hr := &helmv2.HelmRelease{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, hr); err != nil {
				continue // check reports a HelmRelease that does not decode
			}
			seen[k.Namespace+"/"+k.Name] = true
			out = append(out, hr)
		}
	}
	slices.SortFunc(out, func(a, b *helmv2.HelmRelease) int {
		if a.Namespace != b.Namespace {
			return compareStrings(a.Namespace, b.Namespace)
		}
		return compareStrings(a.Name, b.Name)
	})
	return out
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// helmEffects are the HelmReleases a changed object (b → h) upgrades
// without changing themselves:
//   - a ConfigMap or Secret whose key a HelmRelease reads with valuesFrom
//     (helm-controller v1.x composes the values from spec.valuesFrom, then
//     spec.values, and upgrades when the composed values change:
//     internal/controller/helmrelease_controller.go, chartutil values;
//     the key is valuesKey, default values.yaml: meta.ValuesReference);
//   - an OCIRepository, HelmChart or ExternalArtifact a HelmRelease's
//     spec.chartRef names (a shared chart source whose tag changes
//     upgrades every HelmRelease reading it);
//   - a HelmRepository, GitRepository or Bucket a HelmRelease's chart
//     template reads (the HelmChart it makes is fetched again; an upgrade
//     when the chart it resolves changes).
func helmEffects(k ObjectKey, b, h *unstructured.Unstructured, hrs []*helmv2.HelmRelease) []string {
	var out []string
	for _, hr := range hrs {
		ref := hr.Namespace + "/" + hr.Name
		switch {
		case k.Group == "" && (k.Kind == "ConfigMap" || k.Kind == "Secret"):
			for _, v := range hr.Spec.ValuesFrom {
				if v.Kind != k.Kind || v.Name != k.Name || hr.Namespace != k.Namespace {
					continue
				}
				key := v.GetValuesKey()
				if valueOf(b, key) != valueOf(h, key) {
					out = append(out, fmt.Sprintf("HelmRelease %s reads its %s with valuesFrom → Helm upgrade", ref, key))
					break
				}
			}
		case k.Group == sourcev1.GroupVersion.Group:
			if c, ok := fluxobj.HelmReleaseChartRef(hr); ok && c.Kind == k.Kind && c.Name == k.Name && c.Namespace == k.Namespace {
				out = append(out, fmt.Sprintf("HelmRelease %s takes its chart from it (chartRef) → Helm upgrade when the artifact changes", ref))
				continue
			}
			if c, ok := fluxobj.HelmReleaseChartSource(hr); ok && c.Kind == k.Kind && c.Name == k.Name && c.Namespace == k.Namespace &&
				!equality.Semantic.DeepEqual(field(b, "spec"), field(h, "spec")) {
				out = append(out, fmt.Sprintf("HelmRelease %s's chart %s is fetched from it again → Helm upgrade if the chart it resolves changes", ref, hr.Spec.Chart.Spec.Chart))
			}
		}
	}
	return out
}

// valueOf is a ConfigMap's or Secret's value of key, as text (data,
// stringData or binaryData), "" when absent.
func valueOf(u *unstructured.Unstructured, key string) string {
	if u == nil {
		return ""
	}
	for _, f := range []string{"data", "stringData", "binaryData"} {
		if v, ok := field(u, f, key).(string); ok {
			return f + ":" + v
		}
	}
	return ""
}
