package registry

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/homelab-ops/bootstrap/internal/ociartifact"
)

// ArtifactURL is the OCI repository an artifact named name is pushed to,
// as an OCIRepository's spec.url names it.
func (r *Registry) ArtifactURL(name string) string { return "oci://" + r.host + "/fleet/" + name }

// PushArtifact pushes dir as a Flux OCI artifact (what `flux push artifact`
// makes: internal/ociartifact) to ArtifactURL(name) at tag, over the
// registry's TLS. It returns the revision source-controller will report
// for that tag, `<tag>@sha256:<digest>`.
func (r *Registry) PushArtifact(ctx context.Context, dir, name, tag string, meta ociartifact.Meta) (string, error) {
	ref := strings.TrimPrefix(r.ArtifactURL(name), "oci://") + ":" + tag
	rev, err := ociartifact.Push(ctx, dir, ref, meta, remote.WithTransport(r.client.Transport))
	if err != nil {
		return "", fmt.Errorf("registry: %w", err)
	}
	return rev, nil
}
