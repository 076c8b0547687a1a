package fluxobj

import (
	"fmt"
	"strings"
	"testing"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func kust(ns string, ref kustomizev1.CrossNamespaceSourceReference, deps ...meta.DependencyReference) *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apps"}}
	k.Spec.SourceRef, k.Spec.DependsOn = ref, deps
	return k
}

func hr(ns string) *helmv2.HelmRelease {
	return &helmv2.HelmRelease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "podinfo"}}
}

// TestKustomizationSource: the sourceRef's namespace defaults to the
// Kustomization's, the kind is as written.
// kustomize-controller v1.9.5, internal/controller/kustomization_controller.go,
// (*KustomizationReconciler).getSource: sourceNamespace := obj.GetNamespace(),
// replaced by obj.Spec.SourceRef.Namespace when set; switch on
// obj.Spec.SourceRef.Kind, any other kind unsupported.
func TestKustomizationSource(t *testing.T) {
	for _, tc := range []struct {
		name string
		ref  kustomizev1.CrossNamespaceSourceReference
		want string
	}{
		{"namespace defaulted", kustomizev1.CrossNamespaceSourceReference{Kind: GitRepositoryKind, Name: "repo"}, "GitRepository/apps-ns/repo"},
		{"namespace kept", kustomizev1.CrossNamespaceSourceReference{Kind: OCIRepositoryKind, Name: "repo", Namespace: "flux-system"}, "OCIRepository/flux-system/repo"},
		{"bucket", kustomizev1.CrossNamespaceSourceReference{Kind: BucketKind, Name: "b"}, "Bucket/apps-ns/b"},
		{"external artifact", kustomizev1.CrossNamespaceSourceReference{Kind: ExternalArtifactKind, Name: "ea"}, "ExternalArtifact/apps-ns/ea"},
		{"kind not defaulted", kustomizev1.CrossNamespaceSourceReference{Name: "repo"}, "/apps-ns/repo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := KustomizationSource(kust("apps-ns", tc.ref)).String(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestKustomizationSourceKind: kustomize-controller v1.9.5,
// internal/controller/kustomization_controller.go, getSource: OCIRepository,
// GitRepository, Bucket and ExternalArtifact; anything else is "not supported".
func TestKustomizationSourceKind(t *testing.T) {
	for kind, ok := range map[string]bool{
		GitRepositoryKind: true, OCIRepositoryKind: true, BucketKind: true, ExternalArtifactKind: true,
		HelmRepositoryKind: false, HelmChartKind: false, "": false, "gitrepository": false,
	} {
		sk, err := KustomizationSourceKind(kind)
		if (err == nil) != ok {
			t.Errorf("%q: err %v, want ok %t", kind, err, ok)
		}
		if ok && (sk.Kind != kind || sk.New() == nil || sk.NewList() == nil) {
			t.Errorf("%q: kind %+v", kind, sk)
		}
		if !ok && (err == nil || !strings.Contains(err.Error(), "not supported")) {
			t.Errorf("%q: error %v does not say not supported", kind, err)
		}
	}
}

// TestKustomizationDependsOn: an empty namespace is the dependent's.
// kustomize-controller v1.9.5, internal/controller/kustomization_controller.go,
// (*KustomizationReconciler).checkDependencies: if depRef.Namespace == ""
// { depRef.Namespace = obj.GetNamespace() }, then a Kustomization is read.
func TestKustomizationDependsOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		deps []meta.DependencyReference
		want string
	}{
		{"none", nil, "[]"},
		{"defaulted", []meta.DependencyReference{{Name: "infra"}}, "[team/infra]"},
		{"kept, in order", []meta.DependencyReference{{Name: "b", Namespace: "flux-system"}, {Name: "a"}}, "[flux-system/b team/a]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmt.Sprint(KustomizationDependsOn(kust("team", kustomizev1.CrossNamespaceSourceReference{}, tc.deps...))); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestHelmReleaseDependsOn: an empty namespace is the HelmRelease's, and a
// dependency is a HelmRelease.
// helm-controller v1.6.4, internal/controller/helmrelease_controller.go,
// (*HelmReleaseReconciler).checkDependencies: if depName.Namespace == ""
// { depName.Namespace = obj.GetNamespace() }; dep := &v2.HelmRelease{}.
func TestHelmReleaseDependsOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		deps []meta.DependencyReference
		want string
	}{
		{"none", nil, "[]"},
		{"defaulted", []meta.DependencyReference{{Name: "cert-manager"}}, "[apps/cert-manager]"},
		{"kept", []meta.DependencyReference{{Name: "cilium", Namespace: "kube-system"}, {Name: "x"}}, "[kube-system/cilium apps/x]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hr("apps")
			h.Spec.DependsOn = tc.deps
			if got := fmt.Sprint(HelmReleaseDependsOn(h)); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

// TestHelmReleaseChartRef: chartRef names an OCIRepository, a HelmChart or
// an ExternalArtifact; an empty namespace is the HelmRelease's.
// helm-controller v1.6.4, internal/controller/helmrelease_controller.go,
// (*HelmReleaseReconciler).getSource, getSourceFromOCIRef and
// getSourceFromExternalArtifact: if namespace == "" { namespace =
// obj.GetNamespace() }; api/v2 CrossNamespaceSourceReference:
// Enum=OCIRepository;HelmChart;ExternalArtifact.
func TestHelmReleaseChartRef(t *testing.T) {
	for _, tc := range []struct {
		name string
		ref  *helmv2.CrossNamespaceSourceReference
		want string
		ok   bool
	}{
		{"no chartRef", nil, "//", false},
		{"OCIRepository defaulted", &helmv2.CrossNamespaceSourceReference{Kind: OCIRepositoryKind, Name: "podinfo"}, "OCIRepository/apps/podinfo", true},
		{"HelmChart kept", &helmv2.CrossNamespaceSourceReference{Kind: HelmChartKind, Name: "c", Namespace: "flux-system"}, "HelmChart/flux-system/c", true},
		{"ExternalArtifact defaulted", &helmv2.CrossNamespaceSourceReference{Kind: ExternalArtifactKind, Name: "ea"}, "ExternalArtifact/apps/ea", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hr("apps")
			h.Spec.ChartRef = tc.ref
			got, ok := HelmReleaseChartRef(h)
			if got.String() != tc.want || ok != tc.ok {
				t.Errorf("got %s %t, want %s %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestHelmReleaseChart: a chart template becomes the HelmChart
// <namespace>-<name> of the HelmRelease, in the template sourceRef's
// namespace, defaulting to the HelmRelease's; the HelmChart reads its
// source in its own namespace. targetNamespace and storageNamespace do not
// move it.
// helm-controller v1.6.4, internal/reconcile/helmchart_template.go,
// buildHelmChartFromTemplate: Name: obj.GetHelmChartName(), Namespace:
// template.GetNamespace(obj.Namespace); api/v2/helmrelease_types.go,
// HelmRelease.GetHelmChartName (strings.Join({Namespace, Name}, "-")) and
// HelmChartTemplate.GetNamespace.
func TestHelmReleaseChart(t *testing.T) {
	tpl := func(kind, ns string) *helmv2.HelmChartTemplate {
		return &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "podinfo",
			SourceRef: helmv2.CrossNamespaceObjectReference{Kind: kind, Name: "charts", Namespace: ns}}}
	}
	for _, tc := range []struct {
		name                string
		chart               *helmv2.HelmChartTemplate
		target, storage     string
		wantChart, wantFrom string
		ok                  bool
	}{
		{"no template", nil, "", "", "//", "//", false},
		{"defaulted", tpl(HelmRepositoryKind, ""), "", "", "HelmChart/apps/apps-podinfo", "HelmRepository/apps/charts", true},
		{"in the sourceRef's namespace", tpl(GitRepositoryKind, "flux-system"), "", "", "HelmChart/flux-system/apps-podinfo", "GitRepository/flux-system/charts", true},
		{"targetNamespace and storageNamespace ignored", tpl(BucketKind, ""), "prod", "helm", "HelmChart/apps/apps-podinfo", "Bucket/apps/charts", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hr("apps")
			h.Spec.Chart, h.Spec.TargetNamespace, h.Spec.StorageNamespace = tc.chart, tc.target, tc.storage
			chart, ok := HelmReleaseChart(h)
			from, ok2 := HelmReleaseChartSource(h)
			if chart.String() != tc.wantChart || from.String() != tc.wantFrom || ok != tc.ok || ok2 != tc.ok {
				t.Errorf("got %s from %s (%t %t), want %s from %s (%t)", chart, from, ok, ok2, tc.wantChart, tc.wantFrom, tc.ok)
			}
		})
	}
}

// TestHelmReleaseSource: exactly one of chart and chartRef.
// helm-controller v1.6.4, internal/controller/helmrelease_controller.go,
// isValidChartRef: (HasChartRef && !HasChartTemplate) || (!HasChartRef &&
// HasChartTemplate); the chartRef kinds of api/v2 reference_types.go.
func TestHelmReleaseSource(t *testing.T) {
	tpl := &helmv2.HelmChartTemplate{Spec: helmv2.HelmChartTemplateSpec{Chart: "podinfo", SourceRef: helmv2.CrossNamespaceObjectReference{Kind: HelmRepositoryKind, Name: "charts"}}}
	for _, tc := range []struct {
		name  string
		chart *helmv2.HelmChartTemplate
		ref   *helmv2.CrossNamespaceSourceReference
		want  string
		err   string
	}{
		{"template", tpl, nil, "HelmChart/apps/apps-podinfo", ""},
		{"chartRef", nil, &helmv2.CrossNamespaceSourceReference{Kind: OCIRepositoryKind, Name: "podinfo"}, "OCIRepository/apps/podinfo", ""},
		{"both", tpl, &helmv2.CrossNamespaceSourceReference{Kind: OCIRepositoryKind, Name: "podinfo"}, "", "mutually exclusive"},
		{"neither", nil, nil, "", "neither"},
		{"chartRef of another kind", nil, &helmv2.CrossNamespaceSourceReference{Kind: GitRepositoryKind, Name: "repo"}, "", "is not one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := hr("apps")
			h.Spec.Chart, h.Spec.ChartRef = tc.chart, tc.ref
			got, err := HelmReleaseSource(h)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "HelmRelease apps/podinfo") {
					t.Fatalf("err %v, want one naming the HelmRelease and saying %q", err, tc.err)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Errorf("got %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// TestHelmChartSource: a HelmChart's sourceRef is local (the HelmChart's
// namespace) and names a HelmRepository, GitRepository or Bucket.
// source-controller v1.9.5, internal/controller/helmchart_controller.go,
// (*HelmChartReconciler).getSource: Namespace: obj.GetNamespace(); switch
// on obj.Spec.SourceRef.Kind, default "unsupported source kind".
func TestHelmChartSource(t *testing.T) {
	for _, tc := range []struct {
		kind, want string
		ok         bool
	}{
		{HelmRepositoryKind, "HelmRepository/charts-ns/src", true},
		{GitRepositoryKind, "GitRepository/charts-ns/src", true},
		{BucketKind, "Bucket/charts-ns/src", true},
		{OCIRepositoryKind, "", false},
		{"", "", false},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			hc := &sourcev1.HelmChart{ObjectMeta: metav1.ObjectMeta{Namespace: "charts-ns", Name: "c"}}
			hc.Spec.SourceRef = sourcev1.LocalHelmChartSourceReference{Kind: tc.kind, Name: "src"}
			got, err := HelmChartSource(hc)
			if tc.ok != (err == nil) || (tc.ok && got.String() != tc.want) {
				t.Errorf("got %s, %v; want %s ok %t", got, err, tc.want, tc.ok)
			}
			if !tc.ok && !strings.Contains(fmt.Sprint(err), "unsupported source kind") {
				t.Errorf("error %v", err)
			}
		})
	}
}

// TestKeys: namespace/name, as NodeID and the appliers print and parse it.
func TestKeys(t *testing.T) {
	for s, ok := range map[string]bool{"flux-system/apps": true, "apps": false, "/apps": false, "ns/": false, "": false} {
		k, got := ParseKey(s)
		if got != ok || (ok && k.String() != s) {
			t.Errorf("ParseKey(%q) = %v %t, want ok %t", s, k, got, ok)
		}
	}
	if NamespaceOr("", DefaultNamespace) != "flux-system" || NamespaceOr("apps", DefaultNamespace) != "apps" {
		t.Error("NamespaceOr")
	}
	if !IsKustomization("kustomize.toolkit.fluxcd.io/v1", "Kustomization") || IsKustomization("kustomize.config.k8s.io/v1beta1", "Kustomization") {
		t.Error("IsKustomization")
	}
}
