package converge

import (
	"context"
	"fmt"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/gate"
	"github.com/homelab-ops/bootstrap/internal/wait"
)

// watches are Do's informers: on Kustomizations, on each source kind the
// graph reads, and kick, signalled (without blocking) on every event.
type watches struct {
	kick chan struct{}
	ks   cache.SharedIndexInformer
	src  map[string]cache.SharedIndexInformer
}

// watch starts the informers for ctx's lifetime and waits for their first
// list: a source kind converge cannot read is an input error.
func (p *Phase) watch(ctx context.Context) (*watches, error) {
	w := &watches{kick: make(chan struct{}, 1), src: map[string]cache.SharedIndexInformer{}}
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
	ns := p.watchNamespace()
	w.ks = p.informer(ns, &kustomizev1.KustomizationList{}, &kustomizev1.Kustomization{})
	infs := []cache.SharedIndexInformer{w.ks}
	for _, s := range p.g.Sources() {
		if _, ok := w.src[s.Kind]; ok {
			continue
		}
		sk, err := fluxobj.KustomizationSourceKind(s.Kind)
		if err != nil {
			return nil, gate.InputErrorf("%s: %v", s, err)
		}
		inf := p.informer(ns, sk.NewList(), sk.New())
		w.src[s.Kind] = inf
		infs = append(infs, inf)
	}
	for _, inf := range infs {
		if _, err := inf.AddEventHandler(handler); err != nil {
			return nil, err
		}
		go inf.Run(ctx.Done())
	}
	synced := make([]cache.InformerSynced, 0, len(infs))
	for _, inf := range infs {
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return nil, fmt.Errorf("the watches on Kustomizations and sources did not sync within %s: is the API server reachable and are Flux's CRDs installed?", p.o.Timeout)
	}
	return w, nil
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

// informer is a shared informer on namespace ns ("" for every namespace)
// for one Flux type, listing and watching through the controller-runtime
// client (wait.ListWatch).
func (p *Phase) informer(ns string, list client.ObjectList, obj client.Object) cache.SharedIndexInformer {
	c := p.cl.Client
	lw := wait.ListWatch(c, list, ns, metav1.ListOptions{})
	// A client that declares it cannot stream lists (a fake, in tests) gets
	// a plain list then watch; the API server gets client-go's default.
	return cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, c), obj, 0, cache.Indexers{})
}

// artifactSource is a source with an artifact (fluxobj.Source's kinds).
type artifactSource interface {
	fluxobj.Object
	GetArtifact() *meta.Artifact
}

func (p *Phase) snapshot(ksInf cache.SharedIndexInformer, srcInf map[string]cache.SharedIndexInformer) Snapshot {
	s := Snapshot{Kustomizations: map[NodeID]*kustomizev1.Kustomization{}, Sources: map[SourceRef]Source{}}
	for _, id := range p.g.IDs {
		if o, ok, _ := ksInf.GetStore().GetByKey(id.Namespace + "/" + id.Name); ok {
			s.Kustomizations[id] = o.(*kustomizev1.Kustomization)
		}
	}
	for _, ref := range p.g.Sources() {
		var obj any
		if o, ok, _ := srcInf[ref.Kind].GetStore().GetByKey(ref.Namespace + "/" + ref.Name); ok {
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
		if src.Revision = fluxobj.ArtifactRevision(as); src.Revision != "" {
			src.Desc += "; artifact " + src.Revision
		} else {
			src.Desc += "; no artifact"
		}
	}
	return src
}
