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
	o = o.withDefaults()
	ch := newChanges()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	synced, err := startInformers(wctx, c, o, watchedKinds(o), ch)
	if err != nil {
		return err
	}
	if err := waitSynced(ctx, wctx, o, synced); err != nil {
		return err
	}
	// Armed before the first evaluation: a change made while it reads is
	// seen, and evaluated again.
	ch.arm()
	eval("")
	ch.loop(ctx, o.Debounce, eval)
	return nil
}

// withDefaults fills the zero fields of o.
func (o WatchOptions) withDefaults() WatchOptions {
	if o.Debounce <= 0 {
		o.Debounce = 300 * time.Millisecond
	}
	if o.SyncTimeout <= 0 {
		o.SyncTimeout = 30 * time.Second
	}
	return o
}

// changes gathers the watches' events into a kick and the first cause of a
// burst; events before it is armed (the informers' initial lists, already
// evaluated) are dropped.
type changes struct {
	mu      sync.Mutex
	armed   bool
	pending string
	kick    chan struct{}
}

func newChanges() *changes { return &changes{kick: make(chan struct{}, 1)} }

// arm starts recording events.
func (ch *changes) arm() {
	ch.mu.Lock()
	ch.armed = true
	ch.mu.Unlock()
}

// notify records an event on obj of kind, the cause when it is a burst's
// first.
func (ch *changes) notify(kind string, obj any) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if !ch.armed {
		return // the informers' initial lists: already evaluated
	}
	if m, ok := obj.(metav1.Object); ok && ch.pending == "" {
		ch.pending = fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
	} else if ch.pending == "" {
		ch.pending = kind
	}
	select {
	case ch.kick <- struct{}{}:
	default:
	}
}

// take returns the burst's cause and clears it, with any kick left over.
func (ch *changes) take() string {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	cause := ch.pending
	ch.pending = ""
	select {
	case <-ch.kick:
	default:
	}
	return cause
}

// loop evaluates after each burst of changes (the first kick, then
// debounce to gather the rest) until ctx ends.
func (ch *changes) loop(ctx context.Context, debounce time.Duration, eval func(cause string)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ch.kick:
		}
		// Gather the rest of the burst.
		select {
		case <-ctx.Done():
			return
		case <-time.After(debounce):
		}
		eval(ch.take())
	}
}

// watched is one kind Watch watches.
type watched struct {
	kind string
	list client.ObjectList
	obj  client.Object
	sel  fields.Selector
	// all: every namespace. HelmReleases and their chart sources live
	// in their applications' namespaces, not Flux's.
	all bool
}

// watchedKinds are the kinds status reads, the age-key Secret by name when
// o names it.
func watchedKinds(o WatchOptions) []watched {
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
	return ws
}

// startInformers runs an informer per watched kind until wctx ends, each
// event sent to ch; it returns their HasSynced.
func startInformers(wctx context.Context, c client.WithWatch, o WatchOptions, ws []watched, ch *changes) ([]cache.InformerSynced, error) {
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
			ch.notify(kind, obj)
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    h,
			UpdateFunc: func(_, obj any) { h(obj) },
			DeleteFunc: h,
		}); err != nil {
			return nil, err
		}
		go inf.Run(wctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	return synced, nil
}

// waitSynced waits for the watches' first lists, at most o.SyncTimeout:
// ctx's error when it ended, else an error saying what to check.
func waitSynced(ctx, wctx context.Context, o WatchOptions, synced []cache.InformerSynced) error {
	sctx, scancel := context.WithTimeout(wctx, o.SyncTimeout)
	defer scancel()
	if !cache.WaitForCacheSync(sctx.Done(), synced...) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("status --watch: the watches on %s did not list within %s: check --kubeconfig/--context and the network", o.Namespace, o.SyncTimeout)
	}
	return nil
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
