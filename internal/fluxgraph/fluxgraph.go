// Package fluxgraph is the one dependsOn graph of an environment's Flux
// Kustomizations, built from the repository model (FromEnv: Kustomizations
// not created yet are known, and so is which Kustomization applies each) or
// from live objects (New). Every phase that asks something of that graph
// reads it here: check.graph, sync's before-gate sync.depends-on and
// converge (its graph gate and its walk).
//
// It owns:
//
//   - the edges, each read with the model's rules (internal/fluxobj:
//     dependsOn and sourceRef namespaces defaulted as kustomize-controller
//     defaults them);
//   - cycles, found with fluxcd/pkg/runtime/dependency.Sort (the
//     controllers' own tooling) and named;
//   - dangling edges: a dependsOn naming a Kustomization the graph does
//     not hold (kustomize-controller would wait for it forever);
//   - a topological order and levels;
//   - two relations to the root, which are not the same thing:
//     "applied by the root" — the root's build contains the Kustomization
//     object, directly or through Kustomizations the root applies, so a
//     change in git ever reaches it (known only for the repository model);
//     "ordered after the root" — a dependsOn chain from the Kustomization
//     reaches the root, so it waits for the root (revision-gated within one
//     source: fluxobj.RevisionGated), which is what the converge walk follows;
//   - the verdicts on the graph, typed (Problems): converge, check and
//     sync word them from their fields.
package fluxgraph

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/dependency"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// NodeID names a node: a Kustomization (Kind "") or a HelmRelease (Kind
// fluxobj.HelmReleaseKind), by namespace/name. The empty kind keeps a
// Kustomization's ID what it always was (namespace/name, also in text).
type NodeID struct {
	Kind            string
	Namespace, Name string
}

// String is namespace/name for a Kustomization, HelmRelease/namespace/name
// for a HelmRelease (ParseID reads both).
func (id NodeID) String() string {
	if id.Kind == "" {
		return id.Namespace + "/" + id.Name
	}
	return id.Kind + "/" + id.Namespace + "/" + id.Name
}

// Key is the node's namespace/name.
func (id NodeID) Key() fluxobj.Key { return fluxobj.Key{Namespace: id.Namespace, Name: id.Name} }

// IsHelmRelease says the node is a HelmRelease.
func (id NodeID) IsHelmRelease() bool { return id.Kind == fluxobj.HelmReleaseKind }

// KindName is the node's kind as the API names it.
func (id NodeID) KindName() string {
	if id.Kind == "" {
		return fluxobj.KustomizationKind
	}
	return id.Kind
}

// KustomizationID is the node of the Kustomization k names.
func KustomizationID(k fluxobj.Key) NodeID { return NodeID{Namespace: k.Namespace, Name: k.Name} }

// HelmReleaseID is the node of the HelmRelease k names.
func HelmReleaseID(k fluxobj.Key) NodeID {
	return NodeID{Kind: fluxobj.HelmReleaseKind, Namespace: k.Namespace, Name: k.Name}
}

// ParseID reads namespace/name (a Kustomization: NodeID.String, fluxrepo's
// AppliedBy) or HelmRelease/namespace/name; ok is false for anything else.
func ParseID(s string) (NodeID, bool) {
	if rest, ok := strings.CutPrefix(s, fluxobj.HelmReleaseKind+"/"); ok {
		k, ok := fluxobj.ParseKey(rest)
		return HelmReleaseID(k), ok
	}
	k, ok := fluxobj.ParseKey(s)
	return KustomizationID(k), ok
}

// ID is k's node: defaultNS when k has no namespace (a manifest that sets
// none is applied into it).
func ID(k *kustomizev1.Kustomization, defaultNS string) NodeID {
	return NodeID{Namespace: fluxobj.NamespaceOr(k.Namespace, defaultNS), Name: k.Name}
}

// HelmReleaseNodeID is hr's node, its namespace defaulted to defaultNS.
func HelmReleaseNodeID(hr *helmv2.HelmRelease, defaultNS string) NodeID {
	return HelmReleaseID(fluxobj.Key{Namespace: fluxobj.NamespaceOr(hr.Namespace, defaultNS), Name: hr.Name})
}

// SourceRef names a node's source (the model's Ref): a GitRepository,
// OCIRepository, Bucket or ExternalArtifact.
type SourceRef = fluxobj.Ref

// Node is one Kustomization of the graph.
type Node struct {
	ID NodeID
	// Source is spec.sourceRef as fluxobj.KustomizationSource reads it
	// (namespace defaulted to the node's), an empty kind read as
	// fluxobj.DefaultSourceKind.
	Source SourceRef
	// DependsOn are the direct dependencies, namespaces defaulted, in the
	// order of spec.dependsOn.
	DependsOn []NodeID
	// Dependents are the nodes that list this one in dependsOn, by ID.
	Dependents []NodeID
	// AppliedBy is the Kustomization whose build renders this one; the
	// zero NodeID when none does (only the environment's root directory
	// renders it and no root Kustomization applies that directory) or when
	// that is not known (Graph.AppliersKnown is false; a live HelmRelease's
	// applier is read from kustomize-controller's labels on it).
	AppliedBy NodeID

	// For a HelmRelease, Source is the object helm-controller reads the
	// chart artifact from (fluxobj.HelmReleaseSource: spec.chartRef's
	// object, or the HelmChart its chart template makes); ChartSource is
	// that HelmChart's source (a HelmRepository, GitRepository or Bucket),
	// zero for a chartRef; SourceErr says spec.chart/chartRef is invalid.
	ChartSource SourceRef
	SourceErr   error
	// HelmRelease is the object the node was built from (a HelmRelease
	// node only): its dependsOn entries carry readyExpr.
	HelmRelease *helmv2.HelmRelease
}

// Prereqs are what the node waits for: its dependsOn targets in the graph
// and, for a HelmRelease, the Kustomization that applies it (no
// HelmRelease is created or updated before its applier applies it).
func (g *Graph) Prereqs(id NodeID) []NodeID {
	n := g.Nodes[id]
	if n == nil {
		return nil
	}
	var out []NodeID
	if id.IsHelmRelease() {
		if _, ok := g.Nodes[n.AppliedBy]; ok {
			out = append(out, n.AppliedBy)
		}
	}
	for _, d := range n.DependsOn {
		if _, ok := g.Nodes[d]; ok && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// Edge is a dependsOn edge: From depends on To.
type Edge struct{ From, To NodeID }

// Graph is every Kustomization of an environment with its dependsOn edges.
// Lists of nodes and edges are in IDs order (by namespace/name).
type Graph struct {
	Root NodeID
	// Nodes by ID; IDs lists them sorted by namespace/name.
	Nodes map[NodeID]*Node
	IDs   []NodeID
	// Order is a topological order (dependencies first) from
	// dependency.Sort, without dangling targets; nil when there is a cycle.
	Order []NodeID
	// Cycle is dependency.Sort's error naming the cycle, nil when acyclic;
	// CycleNodes the cycle it names, first node repeated last.
	Cycle      error
	CycleNodes []NodeID
	// HelmCycle and HelmCycleNodes are the same among HelmReleases (their
	// dependsOn is a graph of its own: a HelmRelease depends on
	// HelmReleases only).
	HelmCycle      error
	HelmCycleNodes []NodeID
	// Dangling lists the dependsOn edges whose target is not in the graph.
	Dangling []Edge
	// Rendered are the sources the environment renders (SourcesKnown:
	// a graph of the repository model): a HelmRelease's chart source must
	// be one of them.
	Rendered     map[SourceRef]bool
	SourcesKnown bool
	// NotAfterRoot lists the nodes not ordered after the root: no dependsOn
	// chain from them reaches it (all nodes when the root is not in the
	// graph) and the root's applies do not create them (Node.AppliedBy:
	// the repository model's, or kustomize-controller's labels on live
	// objects). Nothing makes them wait for the root.
	NotAfterRoot []NodeID
	// AppliersKnown says Node.AppliedBy is known (a graph of the repository
	// model); NotAppliedByRoot is then the nodes other than the root whose
	// chain of appliers does not reach the root: bootstrap creates them
	// once, nothing updates or prunes them. Nil when appliers are not known.
	AppliersKnown    bool
	NotAppliedByRoot []NodeID
}

// New is the graph of ks (live objects, or any typed list) rooted at root.
// Kustomizations without a namespace take defaultNS; of two with the same
// ID the first is kept. Which Kustomization applies which is not known
// here (Graph.AppliersKnown is false). The result may hold cycles,
// dangling edges and nodes not ordered after the root: callers gate on
// them.
func New(ks []*kustomizev1.Kustomization, root NodeID, defaultNS string) *Graph {
	return NewWithHelmReleases(ks, nil, root, defaultNS)
}

// NewWithHelmReleases is New with HelmReleases as nodes too (live objects):
// each node's applier is the Kustomization kustomize-controller's labels on
// it name, when that Kustomization is in the graph.
func NewWithHelmReleases(ks []*kustomizev1.Kustomization, hrs []*helmv2.HelmRelease, root NodeID, defaultNS string) *Graph {
	kAppliers := make([]NodeID, len(ks))
	for i, k := range ks {
		kAppliers[i] = LabelledApplier(k.GetLabels())
	}
	appliers := make([]NodeID, len(hrs))
	for i, hr := range hrs {
		appliers[i] = LabelledApplier(hr.GetLabels())
	}
	return build(ks, kAppliers, hrs, appliers, root, defaultNS)
}

// Labels kustomize-controller sets on every object it applies, naming the
// Kustomization (kustomize-controller's reconcile: ssa owner labels).
const (
	AppliedByNameLabel      = "kustomize.toolkit.fluxcd.io/name"
	AppliedByNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// LabelledApplier is the Kustomization the labels name as the applier, or
// the zero NodeID.
func LabelledApplier(labels map[string]string) NodeID {
	name, ns := labels[AppliedByNameLabel], labels[AppliedByNamespaceLabel]
	if name == "" || ns == "" {
		return NodeID{}
	}
	return NodeID{Namespace: ns, Name: name}
}

// FromEnv is the graph of every Kustomization and HelmRelease the
// environment declares, rooted at its root Kustomization (env.Options'
// Namespace and RootName), with which Kustomization applies each
// (Graph.AppliersKnown) and the sources it renders (Graph.SourcesKnown).
func FromEnv(env *fluxrepo.Env) *Graph {
	ks := make([]*kustomizev1.Kustomization, 0, len(env.Kustomizations))
	appliers := make([]NodeID, 0, len(env.Kustomizations))
	for _, k := range env.Kustomizations {
		ks = append(ks, k.Kustomization)
		by, _ := ParseID(k.AppliedBy)
		appliers = append(appliers, by)
	}
	hrs := make([]*helmv2.HelmRelease, 0, len(env.HelmReleases))
	hrAppliers := make([]NodeID, 0, len(env.HelmReleases))
	for _, hr := range env.HelmReleases {
		hrs = append(hrs, hr.HelmRelease)
		by, _ := ParseID(hr.AppliedBy)
		hrAppliers = append(hrAppliers, by)
	}
	o := env.Options
	g := build(ks, appliers, hrs, hrAppliers, NodeID{Namespace: o.Namespace, Name: o.RootName}, o.Namespace)
	g.AppliersKnown = true
	g.NotAppliedByRoot = g.notAppliedByRoot()
	g.SourcesKnown = true
	g.Rendered = map[SourceRef]bool{}
	for _, src := range env.Sources {
		g.Rendered[src.Ref] = true
	}
	for _, gr := range env.GitRepositories {
		g.Rendered[SourceRef{Kind: fluxobj.GitRepositoryKind, Namespace: gr.Namespace, Name: gr.Name}] = true
	}
	return g
}

// build is New, with appliers[i] the applier of ks[i] when appliers is
// not nil, and hrAppliers[i] that of hrs[i].
func build(ks []*kustomizev1.Kustomization, appliers []NodeID, hrs []*helmv2.HelmRelease, hrAppliers []NodeID, root NodeID, defaultNS string) *Graph {
	g := &Graph{Root: root, Nodes: map[NodeID]*Node{}}
	deps := make([]dependency.Dependent, 0, len(ks))
	for i, k := range ks {
		id := ID(k, defaultNS)
		if _, dup := g.Nodes[id]; dup {
			continue
		}
		if k.Namespace != id.Namespace {
			k = k.DeepCopy()
			k.Namespace = id.Namespace
		}
		n := &Node{ID: id, Source: sourceOf(k)}
		for _, d := range fluxobj.KustomizationDependsOn(k) {
			n.DependsOn = append(n.DependsOn, KustomizationID(d))
		}
		if appliers != nil {
			n.AppliedBy = appliers[i]
		}
		g.Nodes[id] = n
		g.IDs = append(g.IDs, id)
		deps = append(deps, k)
	}
	hdeps := make([]dependency.Dependent, 0, len(hrs))
	for i, hr := range hrs {
		id := HelmReleaseNodeID(hr, defaultNS)
		if _, dup := g.Nodes[id]; dup {
			continue
		}
		if hr.Namespace != id.Namespace {
			hr = hr.DeepCopy()
			hr.Namespace = id.Namespace
		}
		n := &Node{ID: id, HelmRelease: hr, AppliedBy: hrAppliers[i]}
		n.Source, n.SourceErr = fluxobj.HelmReleaseSource(hr)
		n.ChartSource, _ = fluxobj.HelmReleaseChartSource(hr)
		for _, d := range fluxobj.HelmReleaseDependsOn(hr) {
			n.DependsOn = append(n.DependsOn, HelmReleaseID(d))
		}
		g.Nodes[id] = n
		g.IDs = append(g.IDs, id)
		hdeps = append(hdeps, helmDependent{hr})
	}
	sort.Slice(g.IDs, func(i, j int) bool { return lessID(g.IDs[i], g.IDs[j]) })
	for _, id := range g.IDs {
		for _, d := range g.Nodes[id].DependsOn {
			if t, ok := g.Nodes[d]; ok {
				t.Dependents = append(t.Dependents, id)
			} else {
				g.Dangling = append(g.Dangling, Edge{From: id, To: d})
			}
		}
	}
	korder, kcycle, knodes := sortNodes(deps, KustomizationID, g.Nodes)
	horder, hcycle, hnodes := sortNodes(hdeps, HelmReleaseID, g.Nodes)
	g.Cycle, g.CycleNodes, g.HelmCycle, g.HelmCycleNodes = kcycle, knodes, hcycle, hnodes
	// No Kustomization waits for a HelmRelease, so Kustomizations first,
	// then HelmReleases, is an order of every edge (dependsOn and applier).
	if kcycle == nil && hcycle == nil {
		g.Order = append(korder, horder...)
	}
	g.NotAfterRoot = g.notAfterRoot()
	return g
}

// helmDependent is a HelmRelease as dependency.Sort reads dependents: its
// spec.dependsOn (the API type's GetDependsOn predates readyExpr).
type helmDependent struct{ *helmv2.HelmRelease }

func (h helmDependent) GetDependsOn() []meta.DependencyReference { return h.Spec.DependsOn }

// lessID orders Kustomizations before HelmReleases, each by namespace/name.
func lessID(a, b NodeID) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	return a.String() < b.String()
}

func sourceOf(k *kustomizev1.Kustomization) SourceRef {
	src := fluxobj.KustomizationSource(k)
	if src.Kind == "" {
		src.Kind = fluxobj.DefaultSourceKind
	}
	return src
}

// sortNodes is a topological order of deps (one kind, mkID its IDs) with
// dependency.Sort, or the cycle it names. Sort walks dangling targets as
// vertices without edges: harmless, they are Dangling and left out of the
// order.
func sortNodes(deps []dependency.Dependent, mkID func(fluxobj.Key) NodeID, nodes map[NodeID]*Node) (order []NodeID, cycle error, cycleNodes []NodeID) {
	sorted, err := dependency.Sort(deps)
	if err != nil {
		_, chain, _ := strings.Cut(err.Error(), ": ")
		for _, s := range strings.Split(chain, " -> ") {
			if k, ok := fluxobj.ParseKey(s); ok {
				cycleNodes = append(cycleNodes, mkID(k))
			}
		}
		return nil, err, cycleNodes
	}
	for _, r := range sorted {
		id := mkID(fluxobj.Key{Namespace: r.Namespace, Name: r.Name})
		if _, ok := nodes[id]; ok && !slices.Contains(order, id) {
			order = append(order, id)
		}
	}
	return order, nil, nil
}

// notAfterRoot walks the dependents relation from the root: what it does
// not reach is not ordered after the root.
func (g *Graph) notAfterRoot() []NodeID {
	seen := map[NodeID]bool{}
	stack := []NodeID{g.Root}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n, ok := g.Nodes[id]
		if !ok || seen[id] {
			continue
		}
		seen[id] = true
		stack = append(stack, n.Dependents...)
	}
	var out []NodeID
	for _, id := range g.IDs {
		// A HelmRelease cannot depend on a Kustomization: its applier
		// orders it (Prereqs), not dependsOn. What the root's applies
		// create cannot reconcile before the root applied it: that orders
		// it too (kustomize-controller has no rule that a child depend on
		// its root, and the flux bootstrap layout's never do).
		if !seen[id] && !id.IsHelmRelease() && !g.appliedByRoot(id) {
			out = append(out, id)
		}
	}
	return out
}

// notAppliedByRoot follows each node's appliers up: a chain that ends (or
// loops) before the root is not applied by the root.
func (g *Graph) notAppliedByRoot() []NodeID {
	var out []NodeID
	for _, id := range g.IDs {
		if id != g.Root && !g.appliedByRoot(id) {
			out = append(out, id)
		}
	}
	return out
}

func (g *Graph) appliedByRoot(id NodeID) bool {
	seen := map[NodeID]bool{}
	for n := g.Nodes[id]; n != nil && !seen[n.ID]; n = g.Nodes[n.AppliedBy] {
		if n.ID == g.Root {
			return true
		}
		seen[n.ID] = true
	}
	return false
}

// Upstream is every node id waits for (Prereqs: dependsOn, and a
// HelmRelease's applier), directly or transitively, each once, in
// depth-first preorder (a prerequisite before its own, in Prereqs order);
// dangling targets are left out.
func (g *Graph) Upstream(id NodeID) []NodeID {
	var out []NodeID
	seen := map[NodeID]bool{}
	var walk func(NodeID)
	walk = func(x NodeID) {
		for _, d := range g.Prereqs(x) {
			if seen[d] {
				continue
			}
			seen[d] = true
			out = append(out, d)
			walk(d)
		}
	}
	if _, ok := g.Nodes[id]; ok {
		walk(id)
	}
	return out
}

// GatedPath is a dependsOn path from from to to (both included) whose
// every edge is one kustomize-controller revision-gates
// (fluxobj.RevisionGated: both Kustomizations read the same source): the
// dependent cannot apply a revision its dependency has not applied. The
// shortest such path, nil when there is none.
func (g *Graph) GatedPath(from, to NodeID) []NodeID {
	if _, ok := g.Nodes[from]; !ok {
		return nil
	}
	prev := map[NodeID]NodeID{from: from}
	queue := []NodeID{from}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			path := []NodeID{cur}
			for cur != from {
				cur = prev[cur]
				path = append(path, cur)
			}
			slices.Reverse(path)
			return path
		}
		n := g.Nodes[cur]
		for _, d := range n.DependsOn {
			dn, ok := g.Nodes[d]
			if _, seen := prev[d]; seen || !ok || !fluxobj.RevisionGated(n.Source, dn.Source) {
				continue
			}
			prev[d] = cur
			queue = append(queue, d)
		}
	}
	return nil
}

// Levels is each node's depth: 0 for nodes without prerequisites, else one
// more than its deepest prerequisite (Prereqs). Nil for a cyclic graph.
func (g *Graph) Levels() map[NodeID]int {
	if g.Order == nil && len(g.Nodes) > 0 {
		return nil
	}
	lv := map[NodeID]int{}
	for _, id := range g.Order {
		l := 0
		for _, d := range g.Prereqs(id) {
			if dl, ok := lv[d]; ok && dl+1 > l {
				l = dl + 1
			}
		}
		lv[id] = l
	}
	return lv
}

// InOrder is the nodes in Order, or by ID when the graph is cyclic.
func (g *Graph) InOrder() []NodeID {
	if g.Order != nil {
		return g.Order
	}
	return g.IDs
}

// Describe is the graph in one line per node (InOrder), for evidence.
func (g *Graph) Describe() []string {
	ids := g.InOrder()
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		n := g.Nodes[id]
		line := fmt.Sprintf("%s (source %s)", id, n.Source)
		if id.IsHelmRelease() && n.AppliedBy != (NodeID{}) {
			line += " applied by " + n.AppliedBy.String()
		}
		if len(n.DependsOn) > 0 {
			ds := make([]string, 0, len(n.DependsOn))
			for _, d := range n.DependsOn {
				ds = append(ds, d.String())
			}
			line += " dependsOn " + strings.Join(ds, ", ")
		}
		out = append(out, line)
	}
	return out
}

// Sources lists the distinct sources the nodes read, sorted.
func (g *Graph) Sources() []SourceRef {
	var out []SourceRef
	for _, id := range g.IDs {
		if s := g.Nodes[id].Source; s.Kind != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// ProblemKind is one of the graph's verdicts: what makes it unusable for
// the walk.
type ProblemKind int

// The graph's verdicts, in the order Problems reports them.
const (
	// RootMissing: the root is not a node of the graph.
	RootMissing ProblemKind = iota + 1
	// CycleFound: dependsOn has a cycle; kustomize-controller would block
	// every node on it forever.
	CycleFound
	// DanglingEdge: a dependsOn target is not in the graph; the dependent
	// would wait for it forever.
	DanglingEdge
	// NotOrderedAfterRoot: no dependsOn chain from the node reaches the
	// root, so nothing orders it after the root.
	NotOrderedAfterRoot
	// DependsOnKustomization: a HelmRelease's dependsOn names a
	// Kustomization (and no HelmRelease of that name): helm-controller
	// reads dependencies as HelmReleases only and would wait forever.
	DependsOnKustomization
	// InvalidChartSource: a HelmRelease sets both or neither of
	// spec.chart and spec.chartRef, or a chartRef kind helm-controller
	// does not read.
	InvalidChartSource
	// ChartSourceNotRendered: a HelmRelease's chart source (its chartRef's
	// object, or its chart template's sourceRef) is not rendered by the
	// environment (repository graphs only).
	ChartSourceNotRendered
)

// Problem is one verdict on the graph, typed: callers word it from its
// fields (String is the plain wording), never by reading text.
type Problem struct {
	Kind ProblemKind
	// Root is the graph's root.
	Root NodeID
	// Node is the node not ordered after the root (NotOrderedAfterRoot).
	Node NodeID
	// Edge is the dangling edge (DanglingEdge, DependsOnKustomization).
	Edge Edge
	// Source is the chart source not rendered (ChartSourceNotRendered);
	// Err why the chart source is invalid (InvalidChartSource).
	Source SourceRef
	Err    error
	// Cycle is dependency.Sort's error and CycleNodes the cycle it names
	// (CycleFound).
	Cycle      error
	CycleNodes []NodeID
}

// Problems are the graph's verdicts: the root missing, the cycle, each
// dangling edge, and (when the root is a node) each node not ordered after
// the root. Empty when the graph is acyclic, complete and rooted.
func (g *Graph) Problems() []Problem {
	var out []Problem
	_, rooted := g.Nodes[g.Root]
	// A graph without a root (converge.Walk's selection of live objects) is
	// held to the cycle and dangling rules only.
	if !rooted && g.Root != (NodeID{}) {
		out = append(out, Problem{Kind: RootMissing, Root: g.Root})
	}
	if g.Cycle != nil {
		out = append(out, Problem{Kind: CycleFound, Root: g.Root, Cycle: g.Cycle, CycleNodes: g.CycleNodes})
	}
	if g.HelmCycle != nil {
		out = append(out, Problem{Kind: CycleFound, Root: g.Root, Cycle: g.HelmCycle, CycleNodes: g.HelmCycleNodes})
	}
	for _, e := range g.Dangling {
		kind := DanglingEdge
		if e.To.IsHelmRelease() {
			if _, isK := g.Nodes[KustomizationID(e.To.Key())]; isK {
				kind = DependsOnKustomization
			}
		}
		out = append(out, Problem{Kind: kind, Root: g.Root, Edge: e})
	}
	for _, id := range g.IDs {
		n := g.Nodes[id]
		if !id.IsHelmRelease() {
			continue
		}
		if n.SourceErr != nil {
			out = append(out, Problem{Kind: InvalidChartSource, Root: g.Root, Node: id, Err: n.SourceErr})
			continue
		}
		if !g.SourcesKnown {
			continue
		}
		// helm-controller makes a chart template's HelmChart; its source
		// must be rendered. A chartRef's object must be rendered itself.
		want := n.Source
		if n.ChartSource.Kind != "" {
			want = n.ChartSource
		}
		if !g.Rendered[want] {
			out = append(out, Problem{Kind: ChartSourceNotRendered, Root: g.Root, Node: id, Source: want})
		}
	}
	if rooted {
		for _, id := range g.NotAfterRoot {
			out = append(out, Problem{Kind: NotOrderedAfterRoot, Root: g.Root, Node: id})
		}
	}
	return out
}

// String is the problem in plain words, naming the fix.
func (p Problem) String() string {
	switch p.Kind {
	case RootMissing:
		return fmt.Sprintf("the root Kustomization %s is not in the graph: add the environment's sync.yaml (or pass --root)", p.Root)
	case CycleFound:
		return fmt.Sprintf("dependsOn has a cycle (%v): kustomize-controller would block every node on it forever; remove one of its edges", p.Cycle)
	case DanglingEdge:
		return fmt.Sprintf("%s depends on %s, which is not in the graph: it would wait forever; add %s or drop the edge", p.Edge.From, p.Edge.To, p.Edge.To)
	case NotOrderedAfterRoot:
		return fmt.Sprintf("%s is not reachable from the root %s through dependsOn: nothing orders it after the root; add a dependsOn chain to %s", p.Node, p.Root, p.Root)
	case DependsOnKustomization:
		return fmt.Sprintf("%s depends on %s, a Kustomization: helm-controller reads a HelmRelease's dependsOn as HelmReleases only and would wait forever; depend on a HelmRelease, or order the Kustomization that applies %s after %s instead", p.Edge.From, p.Edge.To.Key(), p.Edge.From.Key(), p.Edge.To.Key())
	case InvalidChartSource:
		return fmt.Sprintf("%s: %v", p.Node, p.Err)
	case ChartSourceNotRendered:
		return fmt.Sprintf("%s reads its chart from %s, which the environment does not render: helm-controller would report it not found; add %s to the environment or fix the reference", p.Node, p.Source, p.Source)
	}
	return fmt.Sprintf("problem %d", p.Kind)
}
