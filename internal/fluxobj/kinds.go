package fluxobj

import (
	"fmt"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SourceKind is one source kind of the model: how to make its typed
// object and list, and read a list's items.
type SourceKind struct {
	Kind string
	// New is an empty object of the kind; NewList an empty list.
	New     func() Object
	NewList func() client.ObjectList
	// Items are a list's objects (NewList's type).
	Items func(client.ObjectList) []Object
}

// sourceKinds are the source kinds with an artifact, by kind.
var sourceKinds = map[string]SourceKind{
	GitRepositoryKind: sourceKind(GitRepositoryKind,
		func() *sourcev1.GitRepository { return &sourcev1.GitRepository{} },
		func() *sourcev1.GitRepositoryList { return &sourcev1.GitRepositoryList{} },
		func(l *sourcev1.GitRepositoryList) []sourcev1.GitRepository { return l.Items }),
	OCIRepositoryKind: sourceKind(OCIRepositoryKind,
		func() *sourcev1.OCIRepository { return &sourcev1.OCIRepository{} },
		func() *sourcev1.OCIRepositoryList { return &sourcev1.OCIRepositoryList{} },
		func(l *sourcev1.OCIRepositoryList) []sourcev1.OCIRepository { return l.Items }),
	BucketKind: sourceKind(BucketKind,
		func() *sourcev1.Bucket { return &sourcev1.Bucket{} },
		func() *sourcev1.BucketList { return &sourcev1.BucketList{} },
		func(l *sourcev1.BucketList) []sourcev1.Bucket { return l.Items }),
	HelmRepositoryKind: sourceKind(HelmRepositoryKind,
		func() *sourcev1.HelmRepository { return &sourcev1.HelmRepository{} },
		func() *sourcev1.HelmRepositoryList { return &sourcev1.HelmRepositoryList{} },
		func(l *sourcev1.HelmRepositoryList) []sourcev1.HelmRepository { return l.Items }),
	HelmChartKind: sourceKind(HelmChartKind,
		func() *sourcev1.HelmChart { return &sourcev1.HelmChart{} },
		func() *sourcev1.HelmChartList { return &sourcev1.HelmChartList{} },
		func(l *sourcev1.HelmChartList) []sourcev1.HelmChart { return l.Items }),
	ExternalArtifactKind: sourceKind(ExternalArtifactKind,
		func() *sourcev1.ExternalArtifact { return &sourcev1.ExternalArtifact{} },
		func() *sourcev1.ExternalArtifactList { return &sourcev1.ExternalArtifactList{} },
		func(l *sourcev1.ExternalArtifactList) []sourcev1.ExternalArtifact { return l.Items }),
}

// sourceKind builds a SourceKind from typed constructors; items returns
// the list's Items slice (its elements are addressed, not copied).
func sourceKind[T any, PT interface {
	*T
	Object
}, L client.ObjectList, E any, PE interface {
	*E
	Object
}](kind string, newObj func() PT, newList func() L, items func(L) []E) SourceKind {
	return SourceKind{
		Kind:    kind,
		New:     func() Object { return newObj() },
		NewList: func() client.ObjectList { return newList() },
		Items: func(l client.ObjectList) []Object {
			typed, ok := l.(L)
			if !ok {
				return nil
			}
			es := items(typed)
			out := make([]Object, 0, len(es))
			for i := range es {
				out = append(out, PE(&es[i]))
			}
			return out
		},
	}
}

// Source is the source kind named kind; false for a kind that is not a
// source with an artifact.
func Source(kind string) (SourceKind, bool) {
	k, ok := sourceKinds[kind]
	return k, ok
}

// KustomizationSourceKind is the source kind a Kustomization's sourceRef
// may name (KustomizationSourceKinds); another kind is an error, as
// kustomize-controller's getSource makes it.
func KustomizationSourceKind(kind string) (SourceKind, error) {
	for _, k := range KustomizationSourceKinds {
		if k == kind {
			return sourceKinds[kind], nil
		}
	}
	return SourceKind{}, fmt.Errorf("source kind %q is not supported: a Kustomization reads one of %v", kind, KustomizationSourceKinds)
}
