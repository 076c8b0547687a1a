package fluxrepo

import (
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// WritesDollar says whether r written as YAML (Resource.AsYAML) holds a
// "$", without writing it: whether a key or value under it does. JSON and
// YAML escape no "$", and only non-string scalars are written otherwise
// than they are held, none of them with a "$" (see mentionsVar).
func WritesDollar(r *resource.Resource) bool {
	return mentions(r.YNode(), "$", map[*yaml.Node]bool{})
}

func mentions(n *yaml.Node, s string, seen map[*yaml.Node]bool) bool {
	if n == nil || seen[n] {
		return false
	}
	seen[n] = true
	if n.Kind == yaml.AliasNode {
		return mentions(n.Alias, s, seen)
	}
	if strings.Contains(n.Value, s) {
		return true
	}
	return slices.ContainsFunc(n.Content, func(c *yaml.Node) bool { return mentions(c, s, seen) })
}

// appliedMemo remembers Env.Applied: the load and the check ask for the
// same object as applied several times (its ingestion, the model, the
// appliers, the prune and graph checks), and each answer writes the object
// as YAML and runs the substitution again. An answer holds while the data
// it read is the same: the substituteFrom objects of its Kustomization as
// the environment renders them (DataClient reads nothing else). Env.Data
// keeps the first object rendered under a key and never changes one
// (ingestData), so an answer given before such an object was rendered is
// recomputed once it is, and any other is final.
type appliedMemo struct {
	mu sync.Mutex
	m  map[appliedKey]appliedAnswer
}

type appliedKey struct {
	k *Kustomization
	r *resource.Resource
}

type appliedAnswer struct {
	read []*Data // e.Data of each substituteFrom of k, in order (nil: absent)
	out  *resource.Resource
	err  error
}

// substituteData is what Applied's substitution of k's objects reads.
func (e *Env) substituteData(k *Kustomization) []*Data {
	refs := k.Spec.PostBuild.SubstituteFrom
	out := make([]*Data, len(refs))
	for i, ref := range refs {
		out[i] = e.Data[DataKey(ref.Kind, k.Namespace, ref.Name)]
	}
	return out
}

// appliedMemoized is Applied's memoized answer for r of k, if it holds.
func (e *Env) appliedMemoized(k *Kustomization, r *resource.Resource) (appliedAnswer, []*Data, bool) {
	read := e.substituteData(k)
	e.appliedMu.Lock()
	defer e.appliedMu.Unlock()
	if e.applied == nil {
		return appliedAnswer{}, read, false
	}
	a, ok := e.applied.m[appliedKey{k, r}]
	if !ok || !slices.Equal(a.read, read) {
		return appliedAnswer{}, read, false
	}
	return a, read, true
}

func (e *Env) memoizeApplied(k *Kustomization, r *resource.Resource, read []*Data, a appliedAnswer) {
	e.appliedMu.Lock()
	defer e.appliedMu.Unlock()
	if e.applied == nil {
		e.applied = &appliedMemo{m: map[appliedKey]appliedAnswer{}}
	}
	a.read = read
	e.applied.m[appliedKey{k, r}] = a
}

// presubstitute computes Substituted's answer for r of k ahead, on a build
// worker (ahead.go), from read: what k's substitution read when the walk
// submitted k (substituteData, taken on the walk's goroutine; the worker
// never reads Env.Data, which the walk writes). The answer is memoized
// with read, so the walk takes it only where its own read is the same
// (appliedMemoized) and computes it again where it is not.
func (e *Env) presubstitute(k *Kustomization, r *resource.Resource, read []*Data) {
	if !k.Substitutes() || SubstitutionDisabled(r) || !mentionsVar(r.YNode(), map[*yaml.Node]bool{}) {
		return // Applied takes r as it is
	}
	data := make(map[string]*Data, len(read))
	for i, ref := range k.Spec.PostBuild.SubstituteFrom {
		if read[i] != nil {
			data[DataKey(ref.Kind, k.Namespace, ref.Name)] = read[i]
		}
	}
	out, err := e.substitute(k, r, DataClient{Env: e, Data: data})
	e.memoizeApplied(k, r, read, appliedAnswer{out: out, err: err})
}
