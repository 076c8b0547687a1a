package check

import (
	"fmt"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detSourceMissing is the [source-missing] row of the table of detectors.
var detSourceMissing = detector{ID: SourceMissing, Gate: Graph, Advisory: false,
	Short: "Kustomization whose sourceRef the environment does not render",
	Rule:  "kustomize-controller v1.9.5 (internal/controller/kustomization_controller.go: reconcile's getSource answers NotFound: Ready=False ArtifactFailed, \"Source '<kind>/<namespace>/<name>' not found\", requeued at the retry interval forever): nothing of its path is ever applied",
	graph: sourceMissingFindings,
}

// sourceMissingFindings is [source-missing]: a Kustomization reading a
// GitRepository, OCIRepository or Bucket that nothing in the environment
// renders and that is not the root's source (a FluxInstance's sync and
// --source-url declare the root's: Env.SourceOf has it). The root's own
// is [no-root]'s; a path with no root is no finding (its sources are made
// with the root, elsewhere); a warning while a path did not build (it
// may render the source).
func sourceMissingFindings(gs *graphScan) []finding {
	if gs.root == nil {
		return nil
	}
	var out []finding
	for _, k := range gs.env.Kustomizations {
		src := fluxobj.KustomizationSource(k.Kustomization)
		if k == gs.root || k.SourceKey() == gs.root.SourceKey() || gs.env.SourceOf(k) != nil || liveSource(gs.o.live, src) ||
			(src.Kind != fluxobj.GitRepositoryKind && src.Kind != fluxobj.OCIRepositoryKind && src.Kind != fluxobj.BucketKind) {
			continue
		}
		loc := fieldLocation(gs.env, k.Location, "spec", "sourceRef", "name")
		if gs.unbuilt != "" {
			out = append(out, at(loc, verify.Finding{Detector: SourceMissing, Verdict: verify.Warn,
				Message: fmt.Sprintf("Kustomization %s reads %s, which no path that built renders; %s did not build whole and may render it: judged once it builds", k.Ref(), src, gs.unbuilt),
				Fix:     fmt.Sprintf("fix the [build] failure first; then render %s or fix spec.sourceRef", src)}))
			continue
		}
		out = append(out, at(loc, verify.Finding{Detector: SourceMissing,
			Message: fmt.Sprintf("Kustomization %s reads %s, which nothing in the environment renders and which is not the root's source (%s): kustomize-controller reports \"Source '%s' not found\" and retries forever, so nothing of its path %s is ever applied", k.Ref(), src, gs.root.SourceKey(), src, k.Spec.Path),
			Fix:     fmt.Sprintf("render %s (in a path the root applies), or point spec.sourceRef at a source the environment renders (the root's: %s)", src, gs.root.SourceKey())}))
	}
	return out
}
