package chartrender

import (
	"encoding/base64"
	"fmt"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

// Lookup finds an object the repository renders (kind, namespace, name;
// the group is source-controller's for sources, core for a Secret), nil
// when it renders none.
type Lookup func(group, kind, namespace, name string) *unstructured.Unstructured

// SourceOf is where helm-controller gets hr's chart: spec.chartRef naming
// an OCIRepository (its artifact is the chart), or spec.chart's template
// (the HelmChart helm-controller makes) naming a HelmRepository of type
// oci or default (https). Other sources (a HelmChart or ExternalArtifact
// chartRef, a GitRepository or Bucket, a source the repository does not
// render) are errors that say why.
func SourceOf(hr *helmv2.HelmRelease, lookup Lookup) (Source, error) {
	g := sourcev1.GroupVersion.Group
	switch {
	case hr.Spec.ChartRef != nil:
		c := hr.Spec.ChartRef
		if c.Kind != sourcev1.OCIRepositoryKind {
			return Source{}, fmt.Errorf("chartRef %s %s: only an OCIRepository chart source is fetched", c.Kind, c.Name)
		}
		ref, _ := fluxobj.HelmReleaseChartRef(hr)
		ns := ref.Namespace
		u := lookup(g, c.Kind, ns, c.Name)
		if u == nil {
			return Source{}, fmt.Errorf("chartRef OCIRepository %s/%s is not rendered by the repository", ns, c.Name)
		}
		o := &sourcev1.OCIRepository{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, o); err != nil {
			return Source{}, fmt.Errorf("OCIRepository %s/%s: %w", ns, c.Name, err)
		}
		s := Source{Kind: c.Kind, Ref: ns + "/" + c.Name, URL: o.Spec.URL, Insecure: o.Spec.Insecure}
		if r := o.Spec.Reference; r != nil {
			// source-controller getArtifactRef: digest, then semver, then tag.
			switch {
			case r.Digest != "":
				s.Digest = r.Digest
			case r.SemVer != "":
				s.Version, s.Semver = r.SemVer, true
			default:
				s.Version = r.Tag
			}
		}
		if err := sourceCA(&s, ns, o.Spec.CertSecretRef, o.Spec.Provider, lookup); err != nil {
			return Source{}, err
		}
		return s, nil
	case hr.Spec.Chart != nil:
		t := hr.Spec.Chart.Spec
		if t.SourceRef.Kind != sourcev1.HelmRepositoryKind {
			return Source{}, fmt.Errorf("chart %s from %s %s: only a HelmRepository chart source is fetched", t.Chart, t.SourceRef.Kind, t.SourceRef.Name)
		}
		src, _ := fluxobj.HelmReleaseChartSource(hr)
		ns := src.Namespace
		u := lookup(g, sourcev1.HelmRepositoryKind, ns, t.SourceRef.Name)
		if u == nil {
			return Source{}, fmt.Errorf("HelmRepository %s/%s is not rendered by the repository", ns, t.SourceRef.Name)
		}
		r := &sourcev1.HelmRepository{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, r); err != nil {
			return Source{}, fmt.Errorf("HelmRepository %s/%s: %w", ns, t.SourceRef.Name, err)
		}
		// HelmChart spec.version: default "*" (the latest stable).
		v := t.Version
		if v == "" {
			v = "*"
		}
		s := Source{Kind: sourcev1.HelmRepositoryKind, Ref: ns + "/" + t.SourceRef.Name, URL: r.Spec.URL, Chart: t.Chart, Version: v, Insecure: r.Spec.Insecure}
		if err := sourceCA(&s, ns, r.Spec.CertSecretRef, r.Spec.Provider, lookup); err != nil {
			return Source{}, err
		}
		return s, nil
	}
	return Source{}, fmt.Errorf("neither spec.chart nor spec.chartRef")
}

// sourceCA takes ca.crt of the source's certSecretRef when the repository
// renders the Secret in the clear (a SOPS-encrypted one cannot be read:
// the system roots and --charts-ca-file then). A cloud provider's
// workload identity is not available offline.
func sourceCA(s *Source, ns string, ref *meta.LocalObjectReference, provider string, lookup Lookup) error {
	if provider != "" && provider != "generic" {
		return fmt.Errorf("%s uses the %s provider's credentials: not fetched without them", s.Kind+" "+s.Ref, provider)
	}
	if ref == nil || ref.Name == "" {
		return nil
	}
	u := lookup("", "Secret", ns, ref.Name)
	if u == nil {
		return nil
	}
	if v, ok, _ := unstructured.NestedString(u.Object, "stringData", "ca.crt"); ok {
		s.CA = []byte(v)
		return nil
	}
	if v, ok, _ := unstructured.NestedString(u.Object, "data", "ca.crt"); ok {
		if b, err := base64.StdEncoding.DecodeString(v); err == nil {
			s.CA = b
		}
	}
	return nil
}
