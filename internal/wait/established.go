package wait

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/status"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/kube"
)

// established bounds the watches open at once.
const established = 16

// Established waits until kstatus computes every CRD and Namespace among
// objs Current (a CRD Established with its names accepted, a Namespace
// Active). Other kinds are ready once they exist and are not waited for.
// The objects of one kind that carry the render's labels share one watch
// selected by those labels (a Flux install's CRDs: one request, not one
// each); any other object has its own watch, selected by name. Neither
// lists a cluster's thousands of unrelated CRDs.
func Established(ctx context.Context, c client.WithWatch, objs []*unstructured.Unstructured, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(established)
	for _, w := range establishWatches(objs) {
		g.Go(func() error {
			err := w.wait(gctx, c)
			if err != nil && gctx.Err() != nil {
				return fmt.Errorf("%w (--timeout %s)", err, timeout)
			}
			return err
		})
	}
	return g.Wait()
}

// establishWatch is one watch: the objects of one kind and namespace it
// waits for, selected by their shared labels, or one object by its name.
type establishWatch struct {
	gvk    schema.GroupVersionKind
	ns     string
	labels map[string]string
	names  []string
}

// establishWatches groups the CRDs and Namespaces of objs into watches.
func establishWatches(objs []*unstructured.Unstructured) []establishWatch {
	type key struct {
		gvk    schema.GroupVersionKind
		ns     string
		labels string
	}
	byKind := map[key][]*unstructured.Unstructured{}
	var order []key
	for _, o := range objs {
		if !ssautils.IsCRD(o) && !ssautils.IsNamespace(o) {
			continue
		}
		k := key{o.GroupVersionKind(), o.GetNamespace(), labels.SelectorFromSet(kube.SelectorLabels(o)).String()}
		if _, ok := byKind[k]; !ok {
			order = append(order, k)
		}
		byKind[k] = append(byKind[k], o)
	}
	var out []establishWatch
	for _, k := range order {
		group := byKind[k]
		if sel := kube.SelectorLabels(group[0]); len(group) > 1 && len(sel) > 0 {
			w := establishWatch{gvk: k.gvk, ns: k.ns, labels: sel}
			for _, o := range group {
				w.names = append(w.names, o.GetName())
			}
			out = append(out, w)
			continue
		}
		for _, o := range group {
			out = append(out, establishWatch{gvk: k.gvk, ns: k.ns, names: []string{o.GetName()}})
		}
	}
	return out
}

// wait lists and watches until every named object is Current, or one is
// Failed (e.g. a CRD whose names conflict: it never becomes established,
// so waiting out the timeout buys nothing).
func (w establishWatch) wait(ctx context.Context, c client.WithWatch) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(w.gvk.GroupVersion().WithKind(w.gvk.Kind + "List"))
	sel := metav1.ListOptions{LabelSelector: labels.SelectorFromSet(w.labels).String()}
	if len(w.labels) == 0 {
		sel = metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", w.names[0]).String()}
	}
	last := map[string]string{}
	current := map[string]bool{}
	var failed string
	see := func(u *unstructured.Unstructured, deleted bool) {
		name := u.GetName()
		if !slices.Contains(w.names, name) {
			return
		}
		if deleted {
			current[name], last[name] = false, "deleted"
			return
		}
		r, err := status.Compute(u)
		switch {
		case err != nil:
			current[name], last[name] = false, err.Error()
		case r.Status == status.FailedStatus:
			failed = fmt.Sprintf("%s failed: %s", objectID(w.gvk.Kind, w.ns, name), r.Message)
		default:
			current[name], last[name] = r.Status == status.CurrentStatus, fmt.Sprintf("%s: %s", r.Status, r.Message)
		}
	}
	done := func() (bool, error) {
		if failed != "" {
			return true, nil
		}
		for _, n := range w.names {
			if !current[n] {
				return false, nil
			}
		}
		return true, nil
	}
	_, err := watchtools.UntilWithSync(ctx, ListWatch(c, list, w.ns, sel), &unstructured.Unstructured{},
		func(store cache.Store) (bool, error) {
			for _, o := range store.List() {
				if u, ok := o.(*unstructured.Unstructured); ok {
					see(u, false)
				}
			}
			return done()
		},
		func(ev watch.Event) (bool, error) {
			if u, ok := ev.Object.(*unstructured.Unstructured); ok {
				see(u, ev.Type == watch.Deleted)
			}
			return done()
		})
	if failed != "" {
		return fmt.Errorf("%s", failed)
	}
	if err != nil {
		var waiting []string
		for _, n := range w.names {
			if !current[n] {
				state := last[n]
				if state == "" {
					state = "not found"
				}
				waiting = append(waiting, fmt.Sprintf("%s: not ready in time (last state: %s)", objectID(w.gvk.Kind, w.ns, n), state))
			}
		}
		if len(waiting) == 0 {
			return fmt.Errorf("%s: %w", w.gvk.Kind, err)
		}
		return fmt.Errorf("%s", strings.Join(waiting, "; "))
	}
	return nil
}
