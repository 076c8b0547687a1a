package fluxrepo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	swapi "github.com/fluxcd/source-watcher/api/v2/v1beta1"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/artifactgen"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Generator is an ArtifactGenerator the environment renders: source-watcher
// makes an ExternalArtifact of each of its artifacts from its sources, and
// Kustomizations read them. The ones made from this repository (a source
// that is the root's) are built here by source-watcher's rules
// (internal/artifactgen).
type Generator struct {
	*swapi.ArtifactGenerator
	Location  Location
	AppliedBy string
	// Artifacts are the ExternalArtifacts it makes, when known offline
	// (its spec.artifacts, or pathPattern expanded over this repository).
	Artifacts []string
	// Err is why source-watcher refuses its spec or its pathPattern (nil
	// when it does not, or when that cannot be known offline).
	Err error

	reqs   []swapi.OutputArtifact
	known  bool // reqs are known
	staged map[string]*staged
}

// Ref is namespace/name.
func (g *Generator) Ref() string { return g.Namespace + "/" + g.Name }

// staged is one artifact on disk with the directories of its sources.
type staged struct {
	*artifactgen.Artifact
	sources map[string]string
}

// ingestGenerator records the ArtifactGenerator r (in namespace ns), as
// applied (substituted by the Kustomization applying it).
func (l *loader) ingestGenerator(r *resource.Resource, ns string, files []string, appliedBy string) error {
	e := l.env
	raw := r.GetName()
	r = l.substituted(appliedBy, r)
	g := &swapi.ArtifactGenerator{}
	loc := e.Locate(files, r.GetKind(), ns, raw)
	if err := l.decode(r, g, "ArtifactGenerator "+ns+"/"+r.GetName(), loc); err != nil {
		return verify.InputErrorf("ArtifactGenerator %s/%s (%s): %w", ns, r.GetName(), loc, err)
	}
	g.Namespace = ns
	if l.seen["AG/"+ns+"/"+g.Name] {
		return nil
	}
	l.seen["AG/"+ns+"/"+g.Name] = true
	e.Generators = append(e.Generators, &Generator{ArtifactGenerator: g, Location: loc, AppliedBy: appliedBy, staged: map[string]*staged{}})
	return nil
}

// sources maps g's aliases to the directories of the sources this tool
// can read: the root's source is this repository's copy, an
// ExternalArtifact another generator makes from it is that one staged.
// The others are returned by alias as Kind/namespace/name.
func (l *loader) sources(g *Generator, depth int) (dirs, other map[string]string) {
	dirs, other = map[string]string{}, map[string]string{}
	for _, s := range g.Spec.Sources {
		ref := fluxobj.Ref{Kind: s.Kind, Namespace: fluxobj.NamespaceOr(s.Namespace, g.Namespace), Name: s.Name}
		switch {
		case ref.String() == l.sourceKey:
			dirs[s.Alias] = l.tmp
		case s.Kind == fluxobj.ExternalArtifactKind && depth < 4:
			if st, _, err := l.artifact(ref.Namespace, ref.Name, depth+1); err == nil && st != nil {
				dirs[s.Alias] = st.Dir
				continue
			}
			other[s.Alias] = ref.String()
		default:
			other[s.Alias] = ref.String()
		}
	}
	return dirs, other
}

// requests are g's artifacts, expanded once; known is false when its
// pathPattern reads a source that is not this repository.
func (l *loader) requests(g *Generator, depth int) ([]swapi.OutputArtifact, bool) {
	if g.known || g.Err != nil {
		return g.reqs, g.known
	}
	if err := artifactgen.Validate(g.ArtifactGenerator); err != nil {
		g.Err = err
		return nil, false
	}
	dirs, _ := l.sources(g, depth)
	if pp := g.Spec.PathPattern; pp != "" {
		alias, _, _ := strings.Cut(strings.TrimPrefix(pp, "@"), "/")
		if _, ok := dirs[alias]; !ok && g.hasAlias(alias) {
			return nil, false
		}
	}
	reqs, err := artifactgen.Requests(g.ArtifactGenerator, dirs)
	if err != nil {
		g.Err = err
		return nil, false
	}
	g.reqs, g.known = reqs, true
	for _, r := range reqs {
		g.Artifacts = append(g.Artifacts, r.Name)
	}
	return reqs, true
}

func (g *Generator) hasAlias(alias string) bool {
	for _, s := range g.Spec.Sources {
		if s.Alias == alias {
			return true
		}
	}
	return false
}

// notMade is why an ExternalArtifact of this repository's generators is
// not built offline: its generator is refused, or reads a source that is
// not this repository.
type notMade struct {
	gen    *Generator
	reason string
	// failed: source-watcher would fail the generator (not a limit of
	// this tool).
	failed bool
}

// artifact is ExternalArtifact namespace/name staged, with the generator
// making it; (nil, nil, nil) when no generator rendered so far makes it.
func (l *loader) artifact(namespace, name string, depth int) (*staged, *Generator, error) {
	for _, g := range l.env.Generators {
		if g.Namespace != namespace {
			continue
		}
		reqs, known := l.requests(g, depth)
		if g.Err != nil {
			if g.mayMake(name) {
				return nil, g, &notMade{gen: g, failed: true, reason: fmt.Sprintf("source-watcher refuses it: %v", g.Err)}
			}
			continue
		}
		if !known {
			if g.mayMake(name) {
				return nil, g, &notMade{gen: g, reason: fmt.Sprintf("its pathPattern %q reads a source that is not this repository", g.Spec.PathPattern)}
			}
			continue
		}
		for _, r := range reqs {
			if r.Name != name {
				continue
			}
			if st := g.staged[name]; st != nil {
				return st, g, nil
			}
			dirs, other := l.sources(g, depth)
			for _, alias := range artifactgen.Aliases(r) {
				if ref, ok := other[alias]; ok {
					return nil, g, &notMade{gen: g, reason: fmt.Sprintf("its copy operations read source alias %q, %s, which is not this repository", alias, ref)}
				}
			}
			ws := filepath.Join(l.workspace, g.Namespace, g.Name)
			if err := os.MkdirAll(ws, 0o700); err != nil {
				return nil, g, err
			}
			a, err := artifactgen.Build(context.Background(), r, dirs, ws)
			if err != nil {
				return nil, g, &notMade{gen: g, failed: true, reason: fmt.Sprintf("source-watcher fails it with %q", name+" build failed: "+err.Error())}
			}
			st := &staged{Artifact: a, sources: dirs}
			g.staged[name] = st
			l.stagedDirs[a.Dir] = st
			return st, g, nil
		}
	}
	return nil, nil, nil
}

// mayMake: g could make name, as far as can be told without expanding it.
func (g *Generator) mayMake(name string) bool {
	if g.Spec.PathPattern != "" {
		return true
	}
	for _, a := range g.Spec.OutputArtifacts {
		if a.Name == name {
			return true
		}
	}
	return false
}

func (n *notMade) Error() string { return n.reason }

// repoFiles maps the files a build of staged artifact st read to the
// repository files they were copied from (through other artifacts too); a
// file of no known origin stays as read.
func (l *loader) repoFiles(st *staged, files []string) []string {
	var out []string
	for _, f := range files {
		out = append(out, l.origins(st, f, 0)...)
	}
	return out
}

func (l *loader) origins(st *staged, f string, depth int) []string {
	from, ok := st.Origins[f]
	if !ok || depth > 4 {
		return []string{f}
	}
	var out []string
	for _, o := range from {
		dir := st.sources[o.Alias]
		switch up := l.stagedDirs[dir]; {
		case dir == l.tmp:
			out = append(out, o.Path)
		case up != nil:
			out = append(out, l.origins(up, o.Path, depth+1)...)
		default:
			out = append(out, f)
		}
	}
	return out
}

// generatorSources records as sources the ExternalArtifacts each
// generator makes (when known offline): the environment renders them, at
// one remove.
func (l *loader) generatorSources() {
	for _, g := range l.env.Generators {
		l.requests(g, 0)
		for _, name := range g.Artifacts {
			ref := fluxobj.Ref{Kind: fluxobj.ExternalArtifactKind, Namespace: g.Namespace, Name: name}
			if !l.seen["S/"+ref.String()] {
				l.seen["S/"+ref.String()] = true
				l.env.Sources = append(l.env.Sources, &Source{Ref: ref, Location: g.Location, AppliedBy: g.AppliedBy})
			}
		}
	}
}
