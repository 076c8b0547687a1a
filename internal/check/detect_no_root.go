package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detNoRoot is the [no-root] row of the table of detectors.
var detNoRoot = detector{ID: NoRoot, Gate: Graph, Advisory: false,
	Short: "environment without its own root Kustomization or GitRepository",
	Rule:  "flux bootstrap's flux-system/gotk-sync.yaml (or a FluxInstance spec.sync): without the root, nothing applies the path, and a dependsOn on it waits forever (DependencyNotReady)",
	graph: noRootFindings,
}

// noRootFindings is [no-root]: no root here while Kustomizations here
// depend on it, or a root whose source the environment does not render.
func noRootFindings(gs *graphScan) []finding {
	env, root, path, rootRef := gs.env, gs.root, gs.path, gs.rootRef
	if root != nil {
		if env.RootSource != nil {
			return nil
		}
		return []finding{at(root.Location, verify.Finding{Detector: NoRoot,
			Message: fmt.Sprintf("the root Kustomization %s reads %s, which %s does not render", rootRef, root.SourceKey(), path),
			Fix:     fmt.Sprintf("render the %s in %s (e.g. flux-system/gotk-sync.yaml)", fluxobj.KustomizationSource(root.Kustomization).Kind, gs.kustFile)})}
	}
	waiting := dependsOnRoot(env)
	if len(waiting) == 0 {
		return nil // checkGraph's note: a path whose root is made elsewhere
	}
	loc := fluxrepo.Location{File: path}
	if slices.Contains(env.RootFiles, gs.kustFile) {
		loc.File = gs.kustFile
	}
	return []finding{at(loc, verify.Finding{Detector: NoRoot,
		Message: fmt.Sprintf("%s renders no root Kustomization %s and no FluxInstance spec.sync (or flux-instance values instance.sync) has path %s, but %s depend(s) on it: they wait forever, and nothing applies %s after bootstrap", path, rootRef, path, strings.Join(waiting, ", "), path),
		Fix:     fmt.Sprintf("add the root to %s (Kustomization %s with spec.path ./%s and its source, as flux bootstrap's flux-system/gotk-sync.yaml), or declare it: a FluxInstance with spec.sync.path %s, or --source-url URL (--source-kind, --source-ref) when it is made outside the repository", path, rootRef, path, path)})}
}

// dependsOnRoot lists the Kustomizations whose dependsOn names the root
// (Options.Namespace/RootName; an entry's namespace defaults to the
// dependent's, as kustomize-controller reads it).
func dependsOnRoot(env *fluxrepo.Env) []string {
	var out []string
	for _, k := range env.Kustomizations {
		for _, d := range k.Spec.DependsOn {
			if d.Name == env.Options.RootName && fluxobj.NamespaceOr(d.Namespace, k.Namespace) == env.Options.Namespace {
				out = append(out, k.Ref())
				break
			}
		}
	}
	return out
}
