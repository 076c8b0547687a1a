// Package wait is the one way this tool waits on a cluster: Deployments and
// other workloads by kstatus (Rollouts), Flux objects by a caller's
// condition (For; "Ready at generation" is the model's, fluxobj.Ready),
// both driven by watches, never by polling.
package wait

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Clients are what the waits read with.
type Clients struct {
	Client  client.WithWatch
	Dynamic dynamic.Interface
}

// Progress receives one line per status change while waiting.
type Progress func(line string)

// objectID is kind/namespace/name, or kind/name for a cluster-scoped object.
func objectID(kind, ns, name string) string {
	if ns == "" {
		return kind + "/" + name
	}
	return kind + "/" + ns + "/" + name
}

// For lists the named object of list's type, then watches it (client-go's
// UntilWithSync: list, watch from the list's resourceVersion, re-list on a
// broken watch) until cond holds. On timeout or cancellation the error
// carries the last state cond described.
func For[T client.Object](ctx context.Context, c client.WithWatch, list client.ObjectList, ns, name string, cond func(T) (bool, string)) (T, error) {
	var zero T
	lw := listWatch(c, list, ns, name)
	var item T
	last := "not found"
	ev, err := watchtools.UntilWithSync(ctx, lw, newItem[T](), nil, func(ev watch.Event) (bool, error) {
		obj, ok := ev.Object.(T)
		if !ok || ev.Type == watch.Deleted {
			last = "deleted"
			return false, nil
		}
		done, why := cond(obj)
		last = why
		return done, nil
	})
	if err != nil {
		ref := name
		if ns != "" {
			ref = ns + "/" + name
		}
		return zero, fmt.Errorf("%s: not ready in time (last state: %s)", ref, last)
	}
	item, _ = ev.Object.(T)
	return item, nil
}

// listWatch lists and watches the one object ns/name of list's type.
func listWatch(c client.WithWatch, list client.ObjectList, ns, name string) *cache.ListWatch {
	return ListWatch(c, list, ns, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
}

// ListWatch lists and watches the objects of list's type in ns ("" for
// every namespace) that sel selects (its field and label selectors, as the
// API server reads them), through the controller-runtime client: the one
// adapter from that client to client-go's list-watch machinery, for the
// waits here (client-go's UntilWithSync) and for converge's informers on a
// client without a REST config. Controller-runtime's cache and client-go's
// informer factories build their own clients from a rest.Config, so they
// cannot run on controller-runtime's fake client the unit tests drive, and
// the waits' callers hold only the client.
func ListWatch(c client.WithWatch, list client.ObjectList, ns string, sel metav1.ListOptions) *cache.ListWatch {
	opts := func(o metav1.ListOptions) *client.ListOptions {
		o.FieldSelector, o.LabelSelector = sel.FieldSelector, sel.LabelSelector
		return &client.ListOptions{Namespace: ns, Raw: &o}
	}
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			l := list.DeepCopyObject().(client.ObjectList)
			return l, c.List(ctx, l, opts(o))
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), opts(o))
		},
	}
}

// Gone waits until the object ns/name of list's type does not exist (its
// finalizers done), by the same list and watch as For.
func Gone[T client.Object](ctx context.Context, c client.WithWatch, list client.ObjectList, ns, name string) error {
	_, err := watchtools.UntilWithSync(ctx, listWatch(c, list, ns, name), newItem[T](), func(store cache.Store) (bool, error) {
		return len(store.List()) == 0, nil
	}, func(ev watch.Event) (bool, error) {
		return ev.Type == watch.Deleted, nil
	})
	if err != nil {
		return fmt.Errorf("%s/%s: still there (being deleted?): %w", ns, name, err)
	}
	return nil
}

// newItem is a fresh T, for the informer's expected type.
func newItem[T client.Object]() T {
	var zero T
	return reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
}
