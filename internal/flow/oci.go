package flow

import "github.com/homelab-ops/bootstrap/internal/rootsync"

// refuseOCIServe refuses --serve for a root that reads an OCIRepository,
// before the first request and before the Git-specific questions of
// serve(): the temporary source this machine serves is Git.
func refuseOCIServe(built *rootsync.Render) error {
	return rootsync.RefuseOCITemporary(built, "--serve")
}
