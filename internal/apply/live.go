package apply

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/kube"
)

// Live is what the cluster holds of a render's objects, read with one list
// per kind and namespace (selected by the labels every rendered object of
// that kind carries) instead of one read per object. An object the lists
// did not return is read on its own, so a selector that misses (an object
// an older install labelled differently) costs a request, never a wrong
// answer.
type Live struct {
	cl    client.Client
	mu    sync.Mutex
	found map[liveKey]*unstructured.Unstructured
	// gone: read on its own and not found. A miss in a list is not that: the
	// object may carry other labels.
	gone map[liveKey]bool
}

type liveKey struct {
	gvk schema.GroupVersionKind
	client.ObjectKey
}

func keyOf(o *unstructured.Unstructured) liveKey {
	return liveKey{o.GroupVersionKind(), client.ObjectKeyFromObject(o)}
}

// ReadLive lists, for every kind and namespace among objs that has more
// than one object, the live objects carrying the labels all of them carry.
// When a list misses more than one object, one list of the kind's names
// (metadata only, no selector) tells which of them do not exist at all, so
// a fresh install reads each kind once or twice, not each object.
// skipNamespace says a namespace does not exist: nothing in it is read.
func ReadLive(ctx context.Context, cl client.Client, objs []*unstructured.Unstructured, skipNamespace func(string) bool) *Live {
	l := &Live{cl: cl, found: map[liveKey]*unstructured.Unstructured{}, gone: map[liveKey]bool{}}
	type groupKey struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	var order []groupKey
	groups := map[groupKey][]*unstructured.Unstructured{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns != "" && skipNamespace != nil && skipNamespace(ns) {
			l.gone[keyOf(o)] = true // no namespace, nothing in it
			continue
		}
		k := groupKey{o.GroupVersionKind(), ns}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], o)
	}
	for _, k := range order {
		group := groups[k]
		sel := kube.CommonLabels(group)
		if len(group) < 2 || len(sel) == 0 {
			continue // a read per object is as cheap, or the list unbounded
		}
		if k.ns == "" {
			// Only a cluster-scoped kind is listed without a namespace: a
			// namespaced one would be listed across the cluster.
			m, err := cl.RESTMapper().RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
			if err != nil || m.Scope.Name() != meta.RESTScopeNameRoot {
				continue
			}
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
		if err := cl.List(ctx, list, client.MatchingLabels(sel), client.InNamespace(k.ns)); err != nil {
			// Not served yet (a CRD this apply creates), or not allowed:
			// the objects are read one by one, and that read says why.
			continue
		}
		for i := range list.Items {
			it := &list.Items[i]
			it.SetGroupVersionKind(k.gvk)
			l.found[keyOf(it)] = it
		}
		l.confirmMisses(ctx, k.gvk, k.ns, group)
	}
	return l
}

// confirmMisses marks gone the objects of group that the selected list
// missed and that one unselected list of names (metadata only) does not
// hold either. A missed object that exists (labelled otherwise) is left
// for Get to read on its own.
func (l *Live) confirmMisses(ctx context.Context, gvk schema.GroupVersionKind, ns string, group []*unstructured.Unstructured) {
	var missed []liveKey
	for _, o := range group {
		if k := keyOf(o); l.found[k] == nil {
			missed = append(missed, k)
		}
	}
	if len(missed) < 2 {
		return // one read on its own is as cheap
	}
	names := &metav1.PartialObjectMetadataList{}
	names.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err := l.cl.List(ctx, names, client.InNamespace(ns)); err != nil {
		return
	}
	exists := map[string]bool{}
	for _, it := range names.Items {
		exists[it.Name] = true
	}
	for _, k := range missed {
		if !exists[k.Name] {
			l.gone[k] = true
		}
	}
}

// Get is the live object of o, a copy (nil when it does not exist).
func (l *Live) Get(ctx context.Context, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return l.get(ctx, keyOf(o))
}

func (l *Live) get(ctx context.Context, k liveKey) (*unstructured.Unstructured, error) {
	l.mu.Lock()
	found, gone := l.found[k], l.gone[k]
	l.mu.Unlock()
	switch {
	case found != nil:
		return found.DeepCopy(), nil
	case gone:
		return nil, nil
	}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(k.gvk)
	err := l.cl.Get(ctx, k.ObjectKey, live)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case apierrors.IsNotFound(err):
		l.gone[k] = true
		return nil, nil
	case err != nil:
		return nil, err
	}
	l.found[k] = live
	return live.DeepCopy(), nil
}

// Reader is a client whose reads of the render's objects are served from
// l (ssa's diff reads each object again before its dry run); everything
// else goes to the cluster.
func (l *Live) Reader() client.Client { return liveClient{Client: l.cl, live: l} }

type liveClient struct {
	client.Client
	live *Live
}

func (c liveClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || len(opts) > 0 {
		return c.Client.Get(ctx, key, obj, opts...)
	}
	gvk := u.GroupVersionKind()
	live, err := c.live.get(ctx, liveKey{gvk, key})
	switch {
	case err != nil:
		return err
	case live == nil:
		return apierrors.NewNotFound(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, key.Name)
	}
	live.DeepCopyInto(u)
	return nil
}
