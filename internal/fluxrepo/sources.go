package fluxrepo

import (
	"encoding/json"
	"fmt"
	"strings"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
)

// sourceIdentity is what says which repository a source object reads,
// and at which reference: its spec.url (a GitRepository's or
// OCIRepository's; "" for the other kinds) and its spec.ref as JSON.
func sourceIdentity(kind string, obj map[string]any) (url, ref string) {
	if kind != sourcev1.GitRepositoryKind && kind != sourcev1.OCIRepositoryKind {
		return "", ""
	}
	url, _, _ = unstructured.NestedString(obj, "spec", "url")
	if m, ok, _ := unstructured.NestedFieldNoCopy(obj, "spec", "ref"); ok {
		if b, err := json.Marshal(m); err == nil {
			ref = string(b)
		}
	}
	return url, ref
}

// identify sets src's URL and Reference from r, the source object as its
// applier applies it (a ${VAR} in its URL substituted by l.substituted).
func (l *loader) identify(src *Source, r *resource.Resource, appliedBy string) {
	m, err := r.Map()
	if err != nil {
		return
	}
	src.URL, src.Reference = sourceIdentity(r.GetKind(), m)
	if strings.Contains(src.URL, "${") {
		if m, err := l.substituted(appliedBy, r).Map(); err == nil {
			src.URL, src.Reference = sourceIdentity(r.GetKind(), m)
		}
	}
}

// source is the source object the environment renders (or declares) as
// ref's key, nil when none.
func (e *Env) source(key string) *Source {
	for _, s := range e.Sources {
		if s.Ref.String() == key {
			return s
		}
	}
	return nil
}

// SourceOf is the source object Kustomization k reads, as the
// environment renders it or declares it (the root's from a FluxInstance's
// sync, the command line or flux bootstrap's placeholder); nil when
// nothing does: kustomize-controller v1.9.5's getSource
// (kustomization_controller.go) then answers "Source '<kind>/<ns>/<name>'
// not found" and requeues k forever.
func (e *Env) SourceOf(k *Kustomization) *Source {
	return e.source(k.SourceKey())
}

// secondSource is the source k reads when it is not the root's but
// another GitRepository or OCIRepository of this very repository: one
// the environment renders whose URL is the root source's as
// source-controller reaches it (fluxobj.SameSourceURL). nil otherwise
// (another repository, a source nothing renders, no root source known).
func (l *loader) secondSource(k *Kustomization) *Source {
	key := k.SourceKey()
	if key == l.sourceKey {
		return nil
	}
	root, src := l.env.source(l.sourceKey), l.env.source(key)
	if root == nil || src == nil || src.Ref.Kind != root.Ref.Kind || !fluxobj.SameSourceURL(src.URL, root.URL) {
		return nil
	}
	return src
}

// ownSource says whether the walk builds k's path in this repository's
// copy: k reads the root's source, or a second source of this repository.
func (l *loader) ownSource(k *Kustomization, sourceKey string) bool {
	return k.SourceKey() == sourceKey || l.secondSource(k) != nil
}

// noteSecondSource notes a Kustomization built from this checkout though
// it reads a second source of this repository at another reference than
// the root's source.
func (l *loader) noteSecondSource(k *Kustomization) {
	src, root := l.secondSource(k), l.env.source(l.sourceKey)
	if src == nil || root == nil || src.Reference == root.Reference {
		return
	}
	l.env.Notes = append(l.env.Notes, fmt.Sprintf("Kustomization %s (%s): reads %s, a second source of this repository (its URL is the root source %s's), at ref %s, not the root source's %s: checked at this checkout", k.Ref(), k.Location, src.Ref, root.Ref, orNone(src.Reference), orNone(root.Reference)))
}

func orNone(ref string) string {
	if ref == "" {
		return "(none)"
	}
	return ref
}

// becameOwn splits others (Kustomizations the walk passed over as reading
// another source) into those now known to read this repository (a second
// source rendered since) and the rest.
func (l *loader) becameOwn(others []*Kustomization, sourceKey string) (own, rest []*Kustomization) {
	for _, k := range others {
		if l.ownSource(k, sourceKey) {
			own = append(own, k)
		} else {
			rest = append(rest, k)
		}
	}
	return own, rest
}

// noteOthers records the Kustomizations of another source, not built: one
// whose source the environment renders reads another repository (a
// note); one whose source nothing renders waits forever (check.graph's
// [source-missing]).
func (l *loader) noteOthers(others []*Kustomization, sourceKey string) {
	for _, k := range others {
		k.Path = cleanPath(strings.TrimLeft(k.Spec.Path, "/")) // as specPath; shown for one not built
		k.OtherSource = true
		if l.env.SourceOf(k) == nil {
			l.notBuilt(k, fmt.Sprintf("reads %s, which nothing in the environment renders (not the root's source %s): kustomize-controller waits for it forever (Source not found), so its path is never applied and was not built", k.SourceKey(), sourceKey))
			continue
		}
		l.notBuilt(k, fmt.Sprintf("reads %s, not the root's source %s: its path is not in this repository and was not built", k.SourceKey(), sourceKey))
	}
}
