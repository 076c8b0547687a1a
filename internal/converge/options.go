package converge

import (
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	utilwait "k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/reconcile"
)

// Options drive the converge phase.
type Options struct {
	// Declared are the environment's Kustomizations from the repository
	// (e.g. rootsync.Build's), so nodes not created yet are known. Nil: the
	// graph is the live cluster's Kustomizations in Namespace.
	Declared []*kustomizev1.Kustomization
	// DeclaredHelmReleases are the environment's HelmReleases from the
	// repository (DeclaredHelmReleases), labelled with the Kustomization
	// that applies each as kustomize-controller will label them. With a
	// live graph (Declared nil), the live HelmReleases the graph's
	// Kustomizations applied are walked instead.
	DeclaredHelmReleases []*helmv2.HelmRelease
	// From names where Declared came from, for evidence ("clusters/dev").
	From string
	// Namespace defaults a Kustomization's namespace, and is the namespace
	// listed for a live graph ("" lists every namespace).
	Namespace string
	// Root is the root Kustomization (flux-system/flux-system).
	Root NodeID
	// Select, for a live graph, keeps only the Kustomizations it returns
	// true for (nil: every one listed). A selection is walked whole: it is
	// what the caller must prove, whether or not the root leads to it.
	Select func(*kustomizev1.Kustomization) bool
	// Timeout bounds the whole walk.
	Timeout time.Duration
	// Nudge asks blocked or stale dependents to reconcile as soon as their
	// dependencies converged, and failing nodes to retry.
	Nudge bool
	// MaxNudges bounds the reconcile requests per node.
	MaxNudges int
	// Budget is a failing node's retry budget.
	Budget Budget
	// Retry spaces the retries of a nudge the API server could not take
	// (reconcile.DefaultBackoff()).
	Retry utilwait.Backoff
	// GraphFile, when set, receives the graph with verdicts: Mermaid
	// (.md, .mmd) or DOT (.dot).
	GraphFile string
}

// DeclaredKustomizations are env's Kustomizations, each labelled with its
// applier as kustomize-controller labels what it applies (see
// DeclaredHelmReleases).
func DeclaredKustomizations(env *fluxrepo.Env) []*kustomizev1.Kustomization {
	out := make([]*kustomizev1.Kustomization, 0, len(env.Kustomizations))
	for _, k := range env.Kustomizations {
		out = append(out, labelled(k.Kustomization, k.AppliedBy))
	}
	return out
}

// labelled is a copy of o with kustomize-controller's applier labels naming
// appliedBy (o itself when appliedBy is none).
func labelled[T interface {
	client.Object
	DeepCopy() T
}](o T, appliedBy string) T {
	by, ok := fluxgraph.ParseID(appliedBy)
	if !ok {
		return o
	}
	c := o.DeepCopy()
	l := c.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[fluxgraph.AppliedByNameLabel], l[fluxgraph.AppliedByNamespaceLabel] = by.Name, by.Namespace
	c.SetLabels(l)
	return c
}

// DeclaredHelmReleases are env's HelmReleases, each labelled with its
// applier as kustomize-controller labels what it applies
// (fluxgraph.AppliedByNameLabel): the graph reads the applier there, for
// declared and live objects alike.
func DeclaredHelmReleases(env *fluxrepo.Env) []*helmv2.HelmRelease {
	out := make([]*helmv2.HelmRelease, 0, len(env.HelmReleases))
	for _, h := range env.HelmReleases {
		out = append(out, labelled(h.HelmRelease.DeepCopy(), h.AppliedBy))
	}
	return out
}

// DefaultOptions are the command's defaults.
func DefaultOptions() Options {
	return Options{
		Namespace: fluxobj.DefaultNamespace,
		Root:      NodeID{Namespace: fluxobj.DefaultNamespace, Name: fluxobj.DefaultRootName},
		Timeout:   10 * time.Minute,
		Nudge:     true,
		MaxNudges: 10,
		Budget:    Budget{Retries: 2, Backoff: 2 * time.Second, FailAfter: 2 * time.Minute},
		Retry:     reconcile.DefaultBackoff(),
	}
}

// NewPhase is the converge phase on cl.
func NewPhase(connect func() (*apply.Cluster, error), o Options) *Phase {
	d := DefaultOptions()
	if o.Root == (NodeID{}) {
		o.Root = d.Root
	}
	if o.Timeout <= 0 {
		o.Timeout = d.Timeout
	}
	if o.MaxNudges <= 0 {
		o.MaxNudges = d.MaxNudges
	}
	if o.Budget == (Budget{}) {
		o.Budget = d.Budget
	}
	return &Phase{connect: connect, o: o}
}
