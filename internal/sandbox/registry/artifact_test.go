package registry

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/homelab-ops/bootstrap/internal/ociartifact"
)

// A pushed artifact is served over TLS trusting only the sandbox CA at the
// revision PushArtifact returned; without the CA the registry is refused.
func TestPushArtifact(t *testing.T) {
	r := start(t)
	ctx := context.Background()
	rev, err := r.PushArtifact(ctx, chartDir("cni"), "cni", "sandbox", ociartifact.Meta{Source: "test"})
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(strings.TrimPrefix(r.ArtifactURL("cni"), "oci://") + ":sandbox")
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(tag, remote.WithContext(ctx), remote.WithTransport(r.client.Transport))
	if err != nil {
		t.Fatal(err)
	}
	if want := "sandbox@" + desc.Digest.String(); rev != want {
		t.Fatalf("PushArtifact = %s, the registry serves %s", rev, want)
	}
	if _, err := remote.Head(tag, remote.WithContext(ctx)); err == nil {
		t.Fatal("the registry answered a client that does not trust the sandbox CA")
	}
	if _, err := r.PushArtifact(ctx, chartDir("absent"), "x", "sandbox", ociartifact.Meta{}); err == nil {
		t.Fatal("pushed a directory that does not exist")
	}
}
