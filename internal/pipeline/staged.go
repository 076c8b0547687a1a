package pipeline

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Stage records objects a phase planned to apply in this run. On a dry run
// nothing is applied, so a later phase that needs them (the sync needs the
// CRDs and the namespace the controllers phase creates, the age key's
// Secret) plans against what was staged instead of the cluster, and says
// so. A later object with the same kind, namespace and name replaces an
// earlier one.
func (r *Run) Stage(objs ...*unstructured.Unstructured) {
	for _, o := range objs {
		if i := r.stagedIndex(o.GroupVersionKind().GroupKind(), o.GetNamespace(), o.GetName()); i >= 0 {
			r.staged[i] = o
			continue
		}
		r.staged = append(r.staged, o)
	}
}

// Staged is the object a phase before this one staged with that group and
// kind, namespace ("" for a cluster-scoped one) and name; nil when none did.
func (r *Run) Staged(gk schema.GroupKind, namespace, name string) *unstructured.Unstructured {
	if i := r.stagedIndex(gk, namespace, name); i >= 0 {
		return r.staged[i]
	}
	return nil
}

// StagedOf is every staged object of that group and kind, in the order
// staged.
func (r *Run) StagedOf(gk schema.GroupKind) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range r.staged {
		if o.GroupVersionKind().GroupKind() == gk {
			out = append(out, o)
		}
	}
	return out
}

func (r *Run) stagedIndex(gk schema.GroupKind, namespace, name string) int {
	for i, o := range r.staged {
		if o.GroupVersionKind().GroupKind() == gk && o.GetNamespace() == namespace && o.GetName() == name {
			return i
		}
	}
	return -1
}
