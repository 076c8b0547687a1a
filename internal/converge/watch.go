package converge

import (
	"context"
	"fmt"
	"reflect"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/wait"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// watches are Do's informers: on Kustomizations and on each source kind
// the graph reads; kick is signalled (without blocking) on every event, and
// get reads an object from the informers' cache.
type watches struct {
	kick chan struct{}
	get  func(key client.ObjectKey, obj client.Object) bool
}

// informerSet is what watch needs of a set of informers: one per object
// type, started together, read from their cache.
type informerSet interface {
	add(ctx context.Context, list client.ObjectList, obj client.Object) (crcache.Informer, error)
	start(ctx context.Context) bool
	get(ctx context.Context, key client.ObjectKey, obj client.Object) bool
}

// watch starts the informers for ctx's lifetime and waits for their first
// list: a source kind converge cannot read is an input error.
func (p *Phase) watch(ctx context.Context) (*watches, error) {
	w := &watches{kick: make(chan struct{}, 1)}
	notify := func() {
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	}
	set, err := p.informers(p.watchNamespace())
	if err != nil {
		return nil, err
	}
	type typ struct {
		kind string
		list client.ObjectList
		obj  client.Object
	}
	types := []typ{{"Kustomization", &kustomizev1.KustomizationList{}, &kustomizev1.Kustomization{}}}
	if p.hasHelmReleases() {
		types = append(types, typ{"HelmRelease", &helmv2.HelmReleaseList{}, &helmv2.HelmRelease{}})
	}
	sks, err := p.sourceKinds()
	if err != nil {
		return nil, err
	}
	for _, sk := range sks {
		types = append(types, typ{sk.Kind, sk.NewList(), sk.New()})
	}
	for _, t := range types {
		inf, err := set.add(ctx, t.list, t.obj)
		if err != nil {
			return nil, fmt.Errorf("the watch on %s: %w: are Flux's CRDs installed?", t.kind, err)
		}
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
	}
	if !set.start(ctx) {
		return nil, fmt.Errorf("the watches on Kustomizations and sources did not sync within %s: is the API server reachable and are Flux's CRDs installed?", p.o.Timeout)
	}
	w.get = func(key client.ObjectKey, obj client.Object) bool { return set.get(ctx, key, obj) }
	return w, nil
}

// sourceKinds are the source kinds the graph reads, each once: a
// Kustomization's by kustomize-controller's rule (an input error for a kind
// it does not read), a HelmRelease's any source kind with an artifact
// (fluxobj.HelmReleaseSource already held it to helm-controller's kinds).
func (p *Phase) sourceKinds() ([]fluxobj.SourceKind, error) {
	var out []fluxobj.SourceKind
	seen := map[string]bool{}
	for _, id := range p.g.IDs {
		s := p.g.Nodes[id].Source
		if s.Kind == "" || seen[s.Kind] {
			continue
		}
		var sk fluxobj.SourceKind
		if id.IsHelmRelease() {
			var ok bool
			if sk, ok = fluxobj.Source(s.Kind); !ok {
				return nil, verify.InputErrorf("%s: chart source kind %s has no artifact", id, s.Kind)
			}
		} else {
			var err error
			if sk, err = fluxobj.KustomizationSourceKind(s.Kind); err != nil {
				return nil, verify.InputErrorf("%s: %v", s, err)
			}
		}
		seen[s.Kind] = true
		out = append(out, sk)
	}
	return out, nil
}

// informers are controller-runtime's cache on the cluster's REST config,
// scoped to ns ("" for every namespace), with the client's scheme and REST
// mapper (no discovery of its own). A cluster without a REST config (the
// unit tests' fake client, which serves no HTTP) gets client-go informers
// on wait.ListWatch instead.
func (p *Phase) informers(ns string) (informerSet, error) {
	c := p.cl.Client
	if p.cl.Config == nil {
		return &listWatchInformers{c: c, ns: ns}, nil
	}
	o := crcache.Options{Scheme: c.Scheme(), Mapper: c.RESTMapper()}
	if ns != metav1.NamespaceAll {
		o.DefaultNamespaces = map[string]crcache.Config{ns: {}}
	}
	cc, err := crcache.New(p.cl.Config, o)
	if err != nil {
		return nil, fmt.Errorf("the informers on %s: %w", p.cl.Host, err)
	}
	return &crInformers{c: cc}, nil
}

// crInformers are controller-runtime's cache.
type crInformers struct{ c crcache.Cache }

func (s *crInformers) add(ctx context.Context, _ client.ObjectList, obj client.Object) (crcache.Informer, error) {
	return s.c.GetInformer(ctx, obj, crcache.BlockUntilSynced(false))
}

func (s *crInformers) start(ctx context.Context) bool {
	go func() { _ = s.c.Start(ctx) }()
	return s.c.WaitForCacheSync(ctx)
}

func (s *crInformers) get(ctx context.Context, key client.ObjectKey, obj client.Object) bool {
	return s.c.Get(ctx, key, obj) == nil
}

// listWatchInformers are client-go shared informers on wait.ListWatch, for
// a client without a REST config.
type listWatchInformers struct {
	c    client.WithWatch
	ns   string
	infs map[reflect.Type]cache.SharedIndexInformer
}

func (s *listWatchInformers) add(_ context.Context, list client.ObjectList, obj client.Object) (crcache.Informer, error) {
	if s.infs == nil {
		s.infs = map[reflect.Type]cache.SharedIndexInformer{}
	}
	lw := wait.ListWatch(s.c, list, s.ns, metav1.ListOptions{})
	// A client that declares it cannot stream lists (a fake, in tests) gets
	// a plain list then watch.
	inf := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, s.c), obj, 0, cache.Indexers{})
	s.infs[reflect.TypeOf(obj)] = inf
	return inf, nil
}

func (s *listWatchInformers) start(ctx context.Context) bool {
	synced := make([]cache.InformerSynced, 0, len(s.infs))
	for _, inf := range s.infs {
		go inf.Run(ctx.Done())
		synced = append(synced, inf.HasSynced)
	}
	return cache.WaitForCacheSync(ctx.Done(), synced...)
}

func (s *listWatchInformers) get(_ context.Context, key client.ObjectKey, obj client.Object) bool {
	inf, ok := s.infs[reflect.TypeOf(obj)]
	if !ok {
		return false
	}
	o, found, _ := inf.GetStore().GetByKey(key.Namespace + "/" + key.Name)
	if !found {
		return false
	}
	reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(o).Elem())
	return true
}

// watchNamespace is the one namespace every node and source lives in, or
// "" (every namespace) when the graph spans several.
func (p *Phase) watchNamespace() string {
	seen := map[string]bool{}
	for _, id := range p.g.IDs {
		seen[id.Namespace] = true
		seen[p.g.Nodes[id].Source.Namespace] = true
	}
	if len(seen) == 1 {
		for ns := range seen {
			return ns
		}
	}
	return metav1.NamespaceAll
}

// artifactSource is a source with an artifact (fluxobj.Source's kinds).
type artifactSource interface {
	fluxobj.Object
	GetArtifact() *meta.Artifact
}

func (p *Phase) snapshot(w *watches) Snapshot {
	s := Snapshot{Kustomizations: map[NodeID]*kustomizev1.Kustomization{}, HelmReleases: map[NodeID]*helmv2.HelmRelease{}, Sources: map[SourceRef]Source{}}
	for _, id := range p.g.IDs {
		key := client.ObjectKey{Namespace: id.Namespace, Name: id.Name}
		if id.IsHelmRelease() {
			if hr := (&helmv2.HelmRelease{}); w.get(key, hr) {
				s.HelmReleases[id] = hr
			}
			continue
		}
		k := &kustomizev1.Kustomization{}
		if w.get(key, k) {
			s.Kustomizations[id] = k
		}
	}
	for _, ref := range p.g.Sources() {
		var obj any
		// watch made an informer for every source kind the graph reads.
		sk, _ := fluxobj.Source(ref.Kind)
		if o := sk.New(); w.get(client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, o) {
			obj = o
		}
		s.Sources[ref] = SourceOf(ref, obj)
	}
	return s
}

// SourceOf is what the predicate reads of a source object (nil: not found).
func SourceOf(ref SourceRef, o any) Source {
	src := Source{Ref: ref, Desc: "not found"}
	if as, ok := o.(artifactSource); ok {
		src.Found = true
		src.Ready, src.Desc = fluxobj.Ready(as)
		src.Failed = fluxobj.Failed(as)
		if src.Revision = fluxobj.ArtifactRevision(as); src.Revision != "" {
			src.Desc += "; artifact " + src.Revision
		} else {
			src.Desc += "; no artifact"
		}
	}
	return src
}
