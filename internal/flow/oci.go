package flow

import (
	"github.com/homelab-ops/bootstrap/internal/rootsync"
	"github.com/homelab-ops/bootstrap/internal/serve"
)

// ociServe is what --serve serves for a root that reads an OCIRepository:
// the work tree's commit as a Flux OCI artifact at the tag its declared
// ref makes (serve.OCITagOf); nil for a root that reads Git.
func ociServe(built *rootsync.Render) (*serve.OCIOptions, error) {
	if !rootsync.IsOCIRoot(built) {
		return nil, nil
	}
	ref, err := rootsync.OCIRefOf(built.Source)
	if err != nil {
		return nil, err
	}
	tag, why := serve.OCITagOf(ref)
	return &serve.OCIOptions{Tag: tag, Why: why}, nil
}
