// Package artifactgen makes an ArtifactGenerator's ExternalArtifacts
// offline, by source-watcher's rules: the spec validated as its reconciler
// validates it, pathPattern expanded into artifact requests, and each
// artifact's copy operations applied to its sources' files in order, then
// archived through the default source-ignore filter.
//
// The rules are source-watcher v2.2's (fluxcd/source-watcher
// internal/controller artifactgenerator_validation.go and
// artifactgenerator_pathpattern.go, internal/builder builder.go, merge.go
// and extract.go, read at v2.2.1+12 for the v2.2.4 Flux v2.9.5 ships): its
// builder is internal to the controller, so it is rebuilt here, clause by
// clause, and each clause is a case of TestBuild.
package artifactgen

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/sourceignore"
	swapi "github.com/fluxcd/source-watcher/api/v2/v1beta1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
)

// Kind and Group are the ArtifactGenerator's.
const (
	Kind  = swapi.ArtifactGeneratorKind
	Group = "source.extensions.fluxcd.io"
)

// Artifact is one ExternalArtifact a generator makes, staged on disk.
type Artifact struct {
	// Name of the ExternalArtifact (in the generator's namespace).
	Name string
	// Dir holds its contents as kustomize-controller extracts them.
	Dir string
	// Origins are, by staged file (slash-separated, relative to Dir), the
	// source files it was made from: one, or several when merged.
	Origins map[string][]Origin
}

// Origin is a file of a source: its alias and its path in that source.
type Origin struct {
	Alias, Path string
}

// Validate is source-watcher's validateSpec (without the operator's
// --no-cross-namespace-refs lockdown): unique aliases, unique artifact
// names that are object names unless pathPattern renders them, and a
// revision naming a known alias.
func Validate(g *swapi.ArtifactGenerator) error {
	aliases := map[string]bool{}
	for _, s := range g.Spec.Sources {
		if aliases[s.Alias] {
			return fmt.Errorf("duplicate source alias '%s' found", s.Alias)
		}
		aliases[s.Alias] = true
	}
	names := map[string]bool{}
	for _, a := range g.Spec.OutputArtifacts {
		if names[a.Name] {
			return fmt.Errorf("duplicate artifact name '%s' found", a.Name)
		}
		if g.Spec.PathPattern == "" {
			if errs := apivalidation.NameIsDNSSubdomain(a.Name, false); len(errs) > 0 {
				return fmt.Errorf("artifact name %q is not a valid Kubernetes object name: %s", a.Name, strings.Join(errs, "; "))
			}
		}
		if a.Revision != "" && !aliases[strings.TrimPrefix(a.Revision, "@")] {
			return fmt.Errorf("artifact %s revision source alias '%s' not found", a.Name, strings.TrimPrefix(a.Revision, "@"))
		}
		names[a.Name] = true
	}
	return nil
}

// Aliases are the source aliases an artifact's copy operations read.
func Aliases(a swapi.OutputArtifact) []string {
	var out []string
	for _, op := range a.Copy {
		if alias, _, err := parseFrom(op.From); err == nil && !slices.Contains(out, alias) {
			out = append(out, alias)
		}
	}
	return out
}

// Build stages artifact a under workspace from sources (alias → the
// directory holding that source's artifact), as source-watcher's
// ArtifactBuilder.Build does before it archives: the copy operations in
// order, later ones overwriting earlier ones, then what the archive's
// default source-ignore filter drops (VCS files, CI configs, images,
// archives, .sops.yaml …) left out. Its errors are source-watcher's.
func Build(ctx context.Context, a swapi.OutputArtifact, sources map[string]string, workspace string) (*Artifact, error) {
	dir := filepath.Join(workspace, a.Name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create staging dir: %w", err)
	}
	out := &Artifact{Name: a.Name, Dir: dir, Origins: map[string][]Origin{}}
	for _, op := range a.Copy {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := out.apply(ctx, op, sources); err != nil {
			return nil, fmt.Errorf("failed to apply copy operations: failed to apply copy operation from '%s' to '%s': %w", op.From, op.To, err)
		}
	}
	if err := out.archiveFilter(); err != nil {
		return nil, err
	}
	return out, nil
}

// archiveFilter removes what the archiver leaves out of the tarball:
// source-watcher archives with SourceIgnoreFilter(nil, nil), the default
// matcher over the absolute path of each file (fluxcd/pkg/artifact
// storage.Archive); a matched directory's files are matched one by one.
func (a *Artifact) archiveFilter() error {
	m := sourceignore.NewDefaultMatcher(nil, nil)
	return filepath.WalkDir(a.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if m.Match(strings.Split(p, string(filepath.Separator)), false) {
			rel, _ := filepath.Rel(a.Dir, p)
			delete(a.Origins, filepath.ToSlash(rel))
			return os.Remove(p)
		}
		return nil
	})
}

// parseFrom splits "@alias/pattern".
func parseFrom(from string) (alias, pattern string, err error) {
	if !strings.HasPrefix(from, "@") {
		return "", "", fmt.Errorf("source must start with '@'")
	}
	alias, pattern, ok := strings.Cut(from[1:], "/")
	if !ok {
		return "", "", fmt.Errorf("source format must be '@alias/pattern'")
	}
	return alias, pattern, nil
}

// parseTo is the path "@artifact/path" names in the artifact.
func parseTo(to string) (string, error) {
	rel, ok := strings.CutPrefix(to, "@artifact/")
	if !ok {
		return "", fmt.Errorf("destination must start with '@artifact/'")
	}
	return rel, nil
}
