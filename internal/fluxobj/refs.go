package fluxobj

import (
	"fmt"
	"slices"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
)

// KustomizationSourceKinds are the kinds a Kustomization's sourceRef may
// name (kustomize-controller's getSource; ExternalArtifact behind its
// feature gate).
var KustomizationSourceKinds = []string{OCIRepositoryKind, GitRepositoryKind, BucketKind, ExternalArtifactKind}

// HelmChartSourceKinds are the kinds a HelmChart's sourceRef may name
// (source-controller's HelmChartReconciler.getSource).
var HelmChartSourceKinds = []string{HelmRepositoryKind, GitRepositoryKind, BucketKind}

// HelmReleaseChartRefKinds are the kinds a HelmRelease's chartRef may name
// (helm-controller's getSource; ExternalArtifact behind its feature gate).
var HelmReleaseChartRefKinds = []string{OCIRepositoryKind, HelmChartKind, ExternalArtifactKind}

// DefaultSourceKind is the kind read for a Kustomization sourceRef that
// names none. The API server rejects such an object (kind is required), so
// the controller never sees one; a repository may still hold it, and the
// graph then reads it as flux2's `flux create kustomization --source NAME`
// does: a GitRepository.
const DefaultSourceKind = GitRepositoryKind

// KustomizationSource is the source k's spec.sourceRef names: the
// namespace defaults to k's own, the kind is as written (required; see
// KustomizationSourceKinds).
func KustomizationSource(k *kustomizev1.Kustomization) Ref {
	ref := k.Spec.SourceRef
	return Ref{Kind: ref.Kind, Namespace: NamespaceOr(ref.Namespace, k.Namespace), Name: ref.Name}
}

// KustomizationDependsOn are the Kustomizations k's spec.dependsOn names,
// in order: an empty namespace is k's own (kustomize-controller's
// checkDependencies). A Kustomization depends on Kustomizations only.
func KustomizationDependsOn(k *kustomizev1.Kustomization) []Key {
	return dependsOn(k.Namespace, k.Spec.DependsOn)
}

// HelmReleaseDependsOn are the HelmReleases hr's spec.dependsOn names, in
// order: an empty namespace is hr's own (helm-controller's
// checkDependencies). A HelmRelease depends on HelmReleases only.
func HelmReleaseDependsOn(hr *helmv2.HelmRelease) []Key {
	return dependsOn(hr.Namespace, hr.Spec.DependsOn)
}

func dependsOn(namespace string, deps []meta.DependencyReference) []Key {
	var out []Key
	for _, d := range deps {
		out = append(out, Key{Namespace: NamespaceOr(d.Namespace, namespace), Name: d.Name})
	}
	return out
}

// HelmReleaseChartRef is the object hr's spec.chartRef names (an
// OCIRepository, a HelmChart or an ExternalArtifact), its namespace
// defaulted to hr's (helm-controller's getSource, getSourceFromOCIRef,
// getSourceFromExternalArtifact); false when hr has no chartRef.
func HelmReleaseChartRef(hr *helmv2.HelmRelease) (Ref, bool) {
	ref := hr.Spec.ChartRef
	if ref == nil {
		return Ref{}, false
	}
	return Ref{Kind: ref.Kind, Namespace: NamespaceOr(ref.Namespace, hr.Namespace), Name: ref.Name}, true
}

// HelmReleaseChart is the HelmChart helm-controller creates for hr's
// spec.chart template: named <namespace>-<name> of the HelmRelease
// (HelmRelease.GetHelmChartName), in spec.chart.spec.sourceRef's namespace,
// defaulting to hr's (HelmChartTemplate.GetNamespace, as
// buildHelmChartFromTemplate uses them). false when hr has no chart
// template. The release's targetNamespace and storageNamespace play no
// part: they place the Helm release, not its chart.
func HelmReleaseChart(hr *helmv2.HelmRelease) (Ref, bool) {
	if hr.Spec.Chart == nil {
		return Ref{}, false
	}
	return Ref{Kind: HelmChartKind, Namespace: hr.Spec.Chart.GetNamespace(hr.Namespace), Name: hr.GetHelmChartName()}, true
}

// HelmReleaseChartSource is the source of the HelmChart hr's chart
// template creates: spec.chart.spec.sourceRef's kind and name, in the
// HelmChart's own namespace (a HelmChart's sourceRef is local); false when
// hr has no chart template.
func HelmReleaseChartSource(hr *helmv2.HelmRelease) (Ref, bool) {
	chart, ok := HelmReleaseChart(hr)
	if !ok {
		return Ref{}, false
	}
	ref := hr.Spec.Chart.Spec.SourceRef
	return Ref{Kind: ref.Kind, Namespace: chart.Namespace, Name: ref.Name}, true
}

// HelmReleaseSource is the object hr reads its chart's artifact from: the
// chartRef, or the HelmChart its chart template creates. Exactly one of
// them must be set (helm-controller's isValidChartRef); otherwise it is an
// error naming hr.
func HelmReleaseSource(hr *helmv2.HelmRelease) (Ref, error) {
	ref, hasRef := HelmReleaseChartRef(hr)
	chart, hasChart := HelmReleaseChart(hr)
	switch {
	case hasRef && hasChart:
		return Ref{}, fmt.Errorf("HelmRelease %s/%s: spec.chart and spec.chartRef are mutually exclusive: keep one", hr.Namespace, hr.Name)
	case hasRef:
		if !slices.Contains(HelmReleaseChartRefKinds, ref.Kind) {
			return Ref{}, fmt.Errorf("HelmRelease %s/%s: spec.chartRef.kind %q is not one of %v", hr.Namespace, hr.Name, ref.Kind, HelmReleaseChartRefKinds)
		}
		return ref, nil
	case hasChart:
		return chart, nil
	}
	return Ref{}, fmt.Errorf("HelmRelease %s/%s: neither spec.chart nor spec.chartRef is set: set one", hr.Namespace, hr.Name)
}

// HelmChartSource is the source hc's spec.sourceRef names: always in hc's
// own namespace (the reference is local), of a kind in HelmChartSourceKinds;
// another kind is an error as source-controller's getSource makes it.
func HelmChartSource(hc *sourcev1.HelmChart) (Ref, error) {
	ref := hc.Spec.SourceRef
	if !slices.Contains(HelmChartSourceKinds, ref.Kind) {
		return Ref{}, fmt.Errorf("HelmChart %s/%s: unsupported source kind '%s', must be one of: %v", hc.Namespace, hc.Name, ref.Kind, HelmChartSourceKinds)
	}
	return Ref{Kind: ref.Kind, Namespace: hc.Namespace, Name: ref.Name}, nil
}
