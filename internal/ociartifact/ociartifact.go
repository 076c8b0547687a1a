// Package ociartifact builds and pushes a directory as a Flux OCI artifact,
// the format `flux push artifact` makes and source-controller's
// OCIRepository pulls: an OCI image manifest whose config has Flux's media
// type and whose one layer is the directory as a gzipped tarball
// (fluxcd/pkg/tar), annotated with where it came from. The rules are
// fluxcd/pkg/oci v0.68.1 push.go Push and build.go build, and flux v2.9.5
// cmd/flux/push_artifact.go's defaults (the VCS and extension excludes of
// sourceignore), rebuilt on go-containerregistry so the repository's
// dependencies stay as they are.
package ociartifact

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fluxcd/pkg/sourceignore"
	"github.com/fluxcd/pkg/tar"
	"github.com/google/go-containerregistry/pkg/name"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types and annotations of a Flux artifact (fluxcd/pkg/oci v0.68.1
// globals.go, constants.go).
const (
	ConfigMediaType    types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	ContentMediaType   types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	SourceAnnotation                   = "org.opencontainers.image.source"
	RevisionAnnotation                 = "org.opencontainers.image.revision"
	CreatedAnnotation                  = "org.opencontainers.image.created"
)

// Meta is what the artifact says of its origin (flux push artifact
// --source, --revision); Created defaults to now.
type Meta struct {
	Source, Revision string
	Created          time.Time
}

// Build makes the artifact of dir: its files, less what flux push artifact
// leaves out by default (sourceignore.ExcludeVCS and ExcludeExt).
func Build(dir string, m Meta) (gcrv1.Image, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("artifact of %s: not a directory (%v)", dir, err)
	}
	ignore := strings.Join(append(strings.Split(sourceignore.ExcludeVCS, ","), strings.Split(sourceignore.ExcludeExt, ",")...), "\n")
	domain := strings.Split(filepath.Clean(abs), string(filepath.Separator))
	matcher := sourceignore.NewMatcher(sourceignore.ReadPatterns(strings.NewReader(ignore), domain))
	var buf bytes.Buffer
	if _, err := tar.Tar(abs, &buf, tar.WithFilter(func(p string, fi os.FileInfo) bool {
		return matcher.Match(strings.Split(p, string(filepath.Separator)), fi.IsDir())
	})); err != nil {
		return nil, fmt.Errorf("artifact of %s: %w", dir, err)
	}
	if m.Created.IsZero() {
		m.Created = time.Now()
	}
	created := m.Created.UTC().Truncate(time.Second)
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, ConfigMediaType)
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg.Created = gcrv1.Time{Time: created}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return nil, err
	}
	ann := map[string]string{CreatedAnnotation: created.Format(time.RFC3339)}
	if m.Source != "" {
		ann[SourceAnnotation] = m.Source
	}
	if m.Revision != "" {
		ann[RevisionAnnotation] = m.Revision
	}
	img = mutate.Annotations(img, ann).(gcrv1.Image)
	return mutate.Append(img, mutate.Addendum{Layer: static.NewLayer(buf.Bytes(), ContentMediaType)})
}

// Push builds dir's artifact and pushes it to ref (host/repository:tag,
// no oci:// prefix). It returns source-controller's revision for that tag,
// `<tag>@<digest>` (source-controller v1.9.5 ocirepository_controller.go
// getRevision).
func Push(ctx context.Context, dir, ref string, m Meta, opts ...remote.Option) (string, error) {
	tag, err := name.NewTag(ref)
	if err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	img, err := Build(dir, m)
	if err != nil {
		return "", err
	}
	if err := remote.Write(tag, img, append([]remote.Option{remote.WithContext(ctx)}, opts...)...); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s@%s", tag.TagStr(), d), nil
}
