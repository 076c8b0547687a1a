package rootsync

import (
	"context"
	"fmt"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// waitFor lists the named object, then watches it from the list's
// resourceVersion until cond holds (no polling, no missed update). On
// timeout the error carries the last state cond described.
func waitFor[T client.Object](ctx context.Context, c client.WithWatch, list client.ObjectList, ns, name string, cond func(T) (bool, string)) (T, error) {
	var zero T
	last := "not found"
	opts := []client.ListOption{client.InNamespace(ns), client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", name)}}
	for {
		if err := c.List(ctx, list, opts...); err != nil {
			if ctx.Err() != nil {
				return zero, fmt.Errorf("%s/%s: %w (last state: %s)", ns, name, ctx.Err(), last)
			}
			return zero, fmt.Errorf("list %s/%s: %w", ns, name, err)
		}
		items, err := apimeta.ExtractList(list)
		if err != nil {
			return zero, err
		}
		for _, it := range items {
			if obj, ok := it.(T); ok {
				done, why := cond(obj)
				if done {
					return obj, nil
				}
				last = why
			}
		}
		rv := list.(metav1.ListInterface).GetResourceVersion()
		w, err := c.Watch(ctx, list, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}})...)
		if err != nil {
			if ctx.Err() != nil {
				return zero, fmt.Errorf("%s/%s: %w (last state: %s)", ns, name, ctx.Err(), last)
			}
			continue
		}
	events:
		for {
			select {
			case <-ctx.Done():
				w.Stop()
				return zero, fmt.Errorf("%s/%s: not ready in time (last state: %s)", ns, name, last)
			case ev, ok := <-w.ResultChan():
				if !ok {
					break events
				}
				if ev.Type == watch.Error {
					w.Stop()
					break events
				}
				if obj, ok := ev.Object.(T); ok && ev.Type != watch.Deleted && ev.Type != watch.Bookmark {
					done, why := cond(obj)
					if done {
						w.Stop()
						return obj, nil
					}
					last = why
				}
			}
		}
	}
}
