package fluxrepo

import (
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst/parse"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	"sigs.k8s.io/kustomize/api/resource"
)

const substituteKey = "kustomize.toolkit.fluxcd.io/substitute"

// SubstitutionDisabled says whether r opts out of post-build substitution
// (label or annotation kustomize.toolkit.fluxcd.io/substitute: disabled),
// as the controller skips it.
func SubstitutionDisabled(r *resource.Resource) bool {
	return r.GetLabels()[substituteKey] == fluxkustomize.DisabledValue || r.GetAnnotations()[substituteKey] == fluxkustomize.DisabledValue
}

// Names are the variables k's objects use as plain ${NAME} (no operator),
// parsed with the controller's parser (fluxcd/pkg/envsubst); objects with
// substitution disabled are skipped, as the controller skips them. A text
// the parser rejects is read line by line.
func (k *Kustomization) Names() map[string]bool {
	out := map[string]bool{}
	for _, r := range k.Resources {
		if SubstitutionDisabled(r) {
			continue
		}
		y, err := r.AsYAML()
		if err != nil {
			continue
		}
		texts := []string{string(y)}
		if _, err := parse.Parse(texts[0]); err != nil {
			texts = strings.Split(texts[0], "\n")
		}
		for _, t := range texts {
			tree, err := parse.Parse(t)
			if err != nil {
				continue
			}
			plainNames(tree.Root, out)
		}
	}
	return out
}

func plainNames(n parse.Node, out map[string]bool) {
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			plainNames(c, out)
		}
	case *parse.FuncNode:
		if n.Name == "" {
			out[n.Param] = true
		}
		for _, a := range n.Args {
			plainNames(a, out)
		}
	}
}

// Prerequisite is a ConfigMap or Secret some Kustomization of the
// environment substitutes from (not optional) that the environment does not
// render: it must be made out of band before they reconcile.
type Prerequisite struct {
	Kind, Namespace, Name string
	// Readers are the Kustomizations substituting from it (namespace/name).
	Readers []string
	// Keys are the names its readers use that nothing the environment
	// renders defines: it must hold them (one of its readers' other
	// prerequisites may instead).
	Keys []string
}

// Key is kind/namespace/name.
func (p *Prerequisite) Key() string { return DataKey(p.Kind, p.Namespace, p.Name) }

// Prerequisites lists the environment's prerequisites, in the order their
// first reader was reached.
func (e *Env) Prerequisites() []*Prerequisite {
	var out []*Prerequisite
	byKey := map[string]*Prerequisite{}
	for _, k := range e.Kustomizations {
		if !k.Built || !k.Substitutes() {
			continue
		}
		var mine []*Prerequisite
		defined := map[string]bool{}
		for _, ref := range k.Spec.PostBuild.SubstituteFrom {
			key := DataKey(ref.Kind, k.Namespace, ref.Name)
			if d := e.Data[key]; d != nil {
				for n := range d.Values {
					defined[n] = true
				}
				continue
			}
			if ref.Optional {
				continue
			}
			p := byKey[key]
			if p == nil {
				p = &Prerequisite{Kind: ref.Kind, Namespace: k.Namespace, Name: ref.Name}
				byKey[key] = p
				out = append(out, p)
			}
			if !slices.Contains(p.Readers, k.Ref()) {
				p.Readers = append(p.Readers, k.Ref())
			}
			mine = append(mine, p)
		}
		if len(mine) == 0 {
			continue
		}
		for n := range k.Spec.PostBuild.Substitute {
			defined[n] = true
		}
		for n := range k.Names() {
			if defined[n] {
				continue
			}
			for _, p := range mine {
				if !slices.Contains(p.Keys, n) {
					p.Keys = append(p.Keys, n)
				}
			}
		}
	}
	for _, p := range out {
		slices.Sort(p.Keys)
	}
	return out
}
