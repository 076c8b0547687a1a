// Package fluxobj is the one model of the Flux objects this tool reads —
// Kustomization, HelmRelease, GitRepository, OCIRepository, Bucket,
// HelmRepository, HelmChart and ExternalArtifact — as the Flux API types
// declare them and as their controllers (kustomize-controller v1.9.5,
// source-controller v1.9.5, helm-controller v1.6.4) read them:
//
//   - the defaults: the namespace and name of the root Kustomization;
//   - the reference rules (refs.go): how each kind's sourceRef, chartRef
//     and dependsOn name another object, namespace and kind defaulted
//     exactly as the controller defaults them, each rule one function with
//     a table test citing the controller's code;
//   - the "converged at revision" rule (ready.go, converged.go): typed
//     clause IDs (Clause), the generic clauses (observed generation,
//     Ready=True at it, not Reconciling, not Stalled) from
//     fluxcd/pkg/runtime/conditions, each kind's predicate with this tool's
//     revision clause on top, and the one classifier of Kustomizations and
//     HelmReleases (ClassifyKustomization, ClassifyHelmRelease: converged,
//     progressing, stale, blocked, failing, terminal);
//   - revision gating (revision.go): which dependsOn edges
//     kustomize-controller gates on the dependency's applied revision;
//   - the source kinds (kinds.go): kind → typed object, list and artifact.
//
// Every package that applies a Flux rule (fluxgraph, fluxrepo, converge,
// rootsync, status, check) reads it here; no other copy exists.
package fluxobj

import (
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
)

// The defaults of `flux install` and `flux bootstrap`: the controllers'
// namespace, and the root Kustomization and its GitRepository, are all
// flux-system.
const (
	// DefaultNamespace is Flux's namespace and the root Kustomization's.
	DefaultNamespace = "flux-system"
	// DefaultRootName is the root Kustomization's name (and its source's).
	DefaultRootName = "flux-system"
)

// The kinds of the model, as the Flux API types name them.
const (
	KustomizationKind    = kustomizev1.KustomizationKind
	HelmReleaseKind      = helmv2.HelmReleaseKind
	GitRepositoryKind    = sourcev1.GitRepositoryKind
	OCIRepositoryKind    = sourcev1.OCIRepositoryKind
	BucketKind           = sourcev1.BucketKind
	HelmRepositoryKind   = sourcev1.HelmRepositoryKind
	HelmChartKind        = sourcev1.HelmChartKind
	ExternalArtifactKind = sourcev1.ExternalArtifactKind
)

// The API groups of the model.
var (
	KustomizeGroup = kustomizev1.GroupVersion.Group
	SourceGroup    = sourcev1.GroupVersion.Group
	HelmGroup      = helmv2.GroupVersion.Group
)

// InGroup says apiVersion (group/version) is of group.
func InGroup(apiVersion, group string) bool { return strings.HasPrefix(apiVersion, group+"/") }

// IsKustomization says apiVersion and kind are a Flux Kustomization (not
// kustomize's own kustomize.config.k8s.io Kustomization).
func IsKustomization(apiVersion, kind string) bool {
	return kind == KustomizationKind && InGroup(apiVersion, KustomizeGroup)
}

// IsSource says apiVersion and kind are a source-controller object.
func IsSource(apiVersion, kind string) bool { return InGroup(apiVersion, SourceGroup) }

// Key names a namespaced object: namespace/name.
type Key struct{ Namespace, Name string }

// String is namespace/name.
func (k Key) String() string { return k.Namespace + "/" + k.Name }

// ParseKey reads namespace/name (Key.String); ok is false for anything
// else (no slash, an empty part).
func ParseKey(s string) (Key, bool) {
	k := KeyOf(s, "")
	return k, strings.Contains(s, "/") && k.Namespace != "" && k.Name != ""
}

// KeyOf is s as NAMESPACE/NAME, or as NAME in defNS: the one parse of the
// NAMESPACE/NAME form (flags such as --root take either).
func KeyOf(s, defNS string) Key {
	if ns, name, found := strings.Cut(s, "/"); found {
		return Key{Namespace: ns, Name: name}
	}
	return Key{Namespace: defNS, Name: s}
}

// Ref names an object of a kind: the object a reference resolves to.
type Ref struct{ Kind, Namespace, Name string }

// String is Kind/namespace/name.
func (r Ref) String() string { return r.Kind + "/" + r.Namespace + "/" + r.Name }

// Key is the referenced object's namespace/name.
func (r Ref) Key() Key { return Key{Namespace: r.Namespace, Name: r.Name} }

// NamespaceOr is ns, or def when ns is empty: the one defaulting every
// reference rule applies (a reference without a namespace is in its
// holder's), and the namespace of a manifest that sets none (applied into
// def).
func NamespaceOr(ns, def string) string {
	if ns == "" {
		return def
	}
	return ns
}
