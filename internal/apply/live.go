package apply

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
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

// selectorLabels are the labels a list may select on: the render's part-of
// and instance labels, which stay the same across Flux versions (the
// version label does not).
var selectorLabels = []string{"app.kubernetes.io/part-of", "app.kubernetes.io/instance"}

// ReadLive lists, for every kind and namespace among objs that has more
// than one object, the live objects carrying the labels all of them carry.
// skipNamespace says a namespace does not exist (nothing to list there).
func ReadLive(ctx context.Context, cl client.Client, objs []*unstructured.Unstructured, skipNamespace func(string) bool) *Live {
	l := &Live{cl: cl, found: map[liveKey]*unstructured.Unstructured{}, gone: map[liveKey]bool{}}
	type group struct {
		gvk    schema.GroupVersionKind
		ns     string
		labels map[string]string
		n      int
	}
	var order []string
	groups := map[string]*group{}
	for _, o := range objs {
		ns := o.GetNamespace()
		if ns != "" && skipNamespace != nil && skipNamespace(ns) {
			continue
		}
		id := o.GroupVersionKind().String() + "|" + ns
		g, ok := groups[id]
		if !ok {
			g = &group{gvk: o.GroupVersionKind(), ns: ns, labels: map[string]string{}}
			for _, k := range selectorLabels {
				if v, ok := o.GetLabels()[k]; ok {
					g.labels[k] = v
				}
			}
			groups[id] = g
			order = append(order, id)
		}
		g.n++
		for k, v := range g.labels {
			if o.GetLabels()[k] != v {
				delete(g.labels, k)
			}
		}
	}
	for _, id := range order {
		g := groups[id]
		if g.n < 2 || len(g.labels) == 0 {
			continue // a read per object is as cheap, or the list unbounded
		}
		if g.ns == "" {
			// Only a cluster-scoped kind is listed without a namespace: a
			// namespaced one would be listed across the cluster.
			m, err := cl.RESTMapper().RESTMapping(g.gvk.GroupKind(), g.gvk.Version)
			if err != nil || m.Scope.Name() != meta.RESTScopeNameRoot {
				continue
			}
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(g.gvk.GroupVersion().WithKind(g.gvk.Kind + "List"))
		opts := []client.ListOption{client.MatchingLabels(g.labels)}
		if g.ns != "" {
			opts = append(opts, client.InNamespace(g.ns))
		}
		if err := cl.List(ctx, list, opts...); err != nil {
			// Not served yet (a CRD this apply creates), or not allowed:
			// the objects are read one by one, and that read says why.
			continue
		}
		for i := range list.Items {
			it := &list.Items[i]
			it.SetGroupVersionKind(g.gvk)
			l.found[keyOf(it)] = it
		}
	}
	return l
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
