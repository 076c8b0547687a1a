package check

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// BuildFailure is what check says of Kustomization k whose path does not
// build (k.Err set): "file:line: Kustomization ns/name: … — fix: …", the
// [build] finding's words, exported for `bootstrap diff` (internal/diff),
// which says a head build failure as check does.
func BuildFailure(env *fluxrepo.Env, k *fluxrepo.Kustomization) string {
	if k.Err == nil {
		return ""
	}
	f := buildFinding(env, k)
	return fmt.Sprintf("%s: %s — fix: %s", f.location(), f.Message, f.Fix)
}
