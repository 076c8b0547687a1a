package status

import (
	"context"
	"fmt"
	"sync"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/wait"
)

// WatchOptions say what --watch watches.
type WatchOptions struct {
	// Namespace holds Flux's Deployments, Kustomizations and sources.
	Namespace string
	// Secret is the age-key Secret's name ("" when not checked).
	Secret string
	// Debounce gathers a burst of events into one evaluation.
	Debounce time.Duration
	// SyncTimeout bounds the watches' first list (default 30 s): an API
	// server that stops answering before it is an error, not a silent
	// wait (the informers would retry it for ever).
	SyncTimeout time.Duration
}

// Watch starts its watches, evaluates once, then again after every change to what status
// reads — Flux's Deployments, ReplicaSets and pods, Kustomizations, the
// three source kinds, the age-key Secret — seen by watches (informers: one
// list, then a watch, no polling), a burst of events gathered into one
// evaluation, until ctx ends. eval gets what changed ("" the first time).
func Watch(ctx context.Context, c client.WithWatch, o WatchOptions, eval func(cause string)) error {
	if o.Debounce <= 0 {
		o.Debounce = 300 * time.Millisecond
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = 30 * time.Second
	}
	var mu sync.Mutex
	armed := false
	pending := ""
	kick := make(chan struct{}, 1)
	notify := func(kind string, obj any) {
		mu.Lock()
		defer mu.Unlock()
		if !armed {
			return // the informers' initial lists: already evaluated
		}
		if m, ok := obj.(metav1.Object); ok && pending == "" {
			pending = fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
		} else if pending == "" {
			pending = kind
		}
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	type watched struct {
		kind string
		list client.ObjectList
		obj  client.Object
		sel  fields.Selector
		// all: every namespace. HelmReleases and their chart sources live
		// in their applications' namespaces, not Flux's.
		all bool
	}
	ws := []watched{
		{"Deployment", &appsv1.DeploymentList{}, &appsv1.Deployment{}, nil, false},
		{"ReplicaSet", &appsv1.ReplicaSetList{}, &appsv1.ReplicaSet{}, nil, false},
		{"Pod", &corev1.PodList{}, &corev1.Pod{}, nil, false},
		{"Kustomization", &kustomizev1.KustomizationList{}, &kustomizev1.Kustomization{}, nil, false},
		{"GitRepository", &sourcev1.GitRepositoryList{}, &sourcev1.GitRepository{}, nil, false},
		{"Bucket", &sourcev1.BucketList{}, &sourcev1.Bucket{}, nil, false},
		{"OCIRepository", &sourcev1.OCIRepositoryList{}, &sourcev1.OCIRepository{}, nil, true},
		{"HelmRepository", &sourcev1.HelmRepositoryList{}, &sourcev1.HelmRepository{}, nil, true},
		{"HelmChart", &sourcev1.HelmChartList{}, &sourcev1.HelmChart{}, nil, true},
		{"HelmRelease", &helmv2.HelmReleaseList{}, &helmv2.HelmRelease{}, nil, true},
	}
	if o.Secret != "" {
		ws = append(ws, watched{"Secret", &corev1.SecretList{}, &corev1.Secret{}, fields.OneTermEqualSelector("metadata.name", o.Secret), false})
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var synced []cache.InformerSynced
	for _, w := range ws {
		ns := o.Namespace
		if w.all {
			ns = metav1.NamespaceAll
		}
		inf := informer(c, ns, w.list, w.obj, w.sel)
		kind, sel := w.kind, w.sel
		h := func(obj any) {
			// The field selector narrows the watch on the API server; what
			// a server (or a fake) that ignores it sends is filtered here.
			if m, ok := obj.(metav1.Object); ok && sel != nil && !sel.Matches(fields.Set{"metadata.name": m.GetName()}) {
				return
			}
			notify(kind, obj)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    h,
			UpdateFunc: func(_, obj any) { h(obj) },
			DeleteFunc: h,
		}); err != nil {
			return err
		}
		go inf.Run(wctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	sctx, scancel := context.WithTimeout(wctx, o.SyncTimeout)
	defer scancel()
	if !cache.WaitForCacheSync(sctx.Done(), synced...) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("status --watch: the watches on %s did not list within %s: check --kubeconfig/--context and the network", o.Namespace, o.SyncTimeout)
	}
	// Armed before the first evaluation: a change made while it reads is
	// seen, and evaluated again.
	mu.Lock()
	armed = true
	mu.Unlock()
	eval("")
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-kick:
		}
		// Gather the rest of the burst.
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(o.Debounce):
		}
		mu.Lock()
		cause := pending
		pending = ""
		select {
		case <-kick:
		default:
		}
		mu.Unlock()
		eval(cause)
	}
}

// informer lists and watches one kind in ns through c (the read-only
// client: a GET with watch=true is a read), by the one adapter from the
// controller-runtime client to client-go's list-watch (wait.ListWatch).
func informer(c client.WithWatch, ns string, list client.ObjectList, obj client.Object, sel fields.Selector) cache.SharedIndexInformer {
	var o metav1.ListOptions
	if sel != nil {
		o.FieldSelector = sel.String()
	}
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(wait.ListWatch(c, list, ns, o), c), obj, 0, cache.Indexers{})
}

// LoopOptions are status --watch's: how to evaluate, and what to watch.
type LoopOptions struct {
	// Client reads the cluster (the read-only one).
	Client client.WithWatch
	// Reachable says whether the API server answers.
	Reachable func() bool
	// Watch says what is watched.
	Watch WatchOptions
	// Evaluate is one evaluation, the n-th (from 1), after a change to
	// cause ("" the first time); it returns that evaluation's exit error.
	Evaluate func(n int, cause string) error
	// Fail turns an error of the watches, when no evaluation says it, into
	// the run's exit error.
	Fail func(error) error
}

// Loop evaluates, then again on every change the watches see, until ctx
// ends (an interrupt), and returns the last evaluation's exit error. A
// cluster that does not answer is not watched: one evaluation, which
// reports cluster.reachable as plain status does.
func Loop(ctx context.Context, o LoopOptions) error {
	var last error
	n := 0
	eval := func(cause string) {
		n++
		last = o.Evaluate(n, cause)
	}
	if !o.Reachable() {
		eval("")
		return last
	}
	if err := Watch(ctx, o.Client, o.Watch, eval); err != nil && ctx.Err() == nil {
		// The watches could not start (a Kind the cluster does not serve:
		// Flux not installed): one evaluation says why, then the run ends.
		if n == 0 {
			eval("")
		}
		if last != nil {
			return last
		}
		return o.Fail(err)
	}
	return last
}
