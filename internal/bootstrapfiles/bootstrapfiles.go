// Package bootstrapfiles reads what a repository's own bootstrap creates
// before Flux runs (issue 54, DESIGN §12): the Taskfile (go-task) task that
// installs Flux and seeds objects, the helmfile releases of a bootstrap
// directory, and the Secrets/ConfigMaps a resources template makes. It
// reads; it never runs a task, helmfile, a template engine or a secret
// manager, and it never reads a value of a Secret (only keys).
//
// Every finding is located at the line of the bootstrap that makes it
// (the Taskfile command, the helmfile release, the template's object); a
// command or file it does not understand is a note, never a guess.
package bootstrapfiles

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// Object is one object the bootstrap creates before Flux's first reconcile.
type Object struct {
	Kind, Namespace, Name string
	// Keys are the data/stringData keys of a Secret or ConfigMap (never
	// the values). Open: the keys are not known (e.g. --from-env-file).
	Keys []string
	Open bool
	// Location is the bootstrap's line that creates it (a Taskfile
	// command, a template's object).
	Location fluxrepo.Location
	// Source is the file or directory the object is read from ("" when the
	// command itself makes it, e.g. kubectl create secret).
	Source string
	// How says which bootstrap step creates it, e.g. "Taskfile task
	// flux:bootstrap: sops --decrypt … | kubectl apply -f -".
	How string
}

// Key is the object as fluxrepo.DataKey spells it (Kind/namespace/name).
func (o Object) Key() string { return fluxrepo.DataKey(o.Kind, o.Namespace, o.Name) }

// String names the object, where it is made and how.
func (o Object) String() string {
	s := fmt.Sprintf("%s (%s: %s", o.Key(), o.Location, o.How)
	if o.Source != "" {
		s += ", from " + o.Source
	}
	return s + ")"
}

// Install is a Flux install the bootstrap applies: the release it pins.
type Install struct {
	// Version is the release as written (e.g. v2.4.0).
	Version string
	// Location is the line naming the release (the kustomization's
	// resources entry, the URL in the command).
	Location fluxrepo.Location
	// How is the bootstrap step that applies it.
	How string
}

// Release is one helmfile release of the bootstrap.
type Release struct {
	Name, Namespace, Chart, Version string
	// Values are the values files it names (paths as written).
	Values   []string
	Location fluxrepo.Location
}

// String names the release and its chart.
func (r Release) String() string {
	s := fmt.Sprintf("helmfile release %s/%s (chart %s", r.Namespace, r.Name, r.Chart)
	if r.Version != "" {
		s += " " + r.Version
	}
	s += ") at " + r.Location.String()
	if len(r.Values) > 0 {
		s += ", values " + strings.Join(r.Values, ", ")
	}
	return s
}

// Bootstrap is what a repository's bootstrap creates before Flux runs.
type Bootstrap struct {
	Objects  []Object
	Installs []Install
	Releases []Release
	// Files are the bootstrap files read (repository-relative).
	Files []string
	// Notes say what was not understood (a command, a template that does
	// not parse): never guessed at.
	Notes []string
}

// Empty says the repository declares no bootstrap this package reads.
func (b *Bootstrap) Empty() bool { return b == nil || len(b.Files) == 0 }

// Object is the object with key (fluxrepo.DataKey) the bootstrap
// creates, or nil.
func (b *Bootstrap) Object(key string) *Object {
	if b == nil {
		return nil
	}
	for i := range b.Objects {
		if b.Objects[i].Key() == key {
			return &b.Objects[i]
		}
	}
	return nil
}

// Evidence is one line per finding, for a report: "bootstrap: Taskfile
// task flux:bootstrap creates …".
func (b *Bootstrap) Evidence() []string {
	if b == nil {
		return nil
	}
	var out []string
	for _, o := range b.Objects {
		out = append(out, fmt.Sprintf("bootstrap: %s creates %s at %s%s", o.How, o.Key(), o.Location, keysText(o)))
	}
	for _, i := range b.Installs {
		out = append(out, fmt.Sprintf("bootstrap: %s installs Flux %s (%s)", i.How, i.Version, i.Location))
	}
	for _, r := range b.Releases {
		out = append(out, "bootstrap: "+r.String())
	}
	for _, n := range b.Notes {
		out = append(out, "bootstrap: note: "+n)
	}
	return out
}

func keysText(o Object) string {
	switch {
	case o.Open:
		return " (keys not known)"
	case len(o.Keys) > 0:
		return " (keys " + strings.Join(o.Keys, ", ") + ")"
	}
	return ""
}

// Read reads the bootstrap of the repository at repo (a directory): the
// root Taskfile, the helmfiles and the resources templates. An error is
// only for a repository that cannot be read; what does not parse is a note.
func Read(repo string) (*Bootstrap, error) {
	abs, err := filepath.Abs(repo)
	if err != nil {
		return nil, err
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	}
	r := &reader{repo: abs, b: &Bootstrap{}}
	r.taskfile()
	r.helmfiles()
	r.templates()
	slices.Sort(r.b.Files)
	r.b.Files = slices.Compact(r.b.Files)
	return r.b, nil
}

// reader is one Read.
type reader struct {
	repo string
	b    *Bootstrap
}

func (r *reader) notef(format string, a ...any) {
	r.b.Notes = append(r.b.Notes, fmt.Sprintf(format, a...))
}

// rel is p relative to the repository, slash-separated; ok is false when p
// is outside it.
func (r *reader) rel(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.repo, p)
	}
	rel, err := filepath.Rel(r.repo, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// addObject keeps o, once per key (the first step that creates it).
func (r *reader) addObject(o Object) {
	if r.b.Object(o.Key()) != nil {
		return
	}
	slices.Sort(o.Keys)
	o.Keys = slices.Compact(o.Keys)
	r.b.Objects = append(r.b.Objects, o)
}
