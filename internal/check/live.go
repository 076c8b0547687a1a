package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// liveRoot is another root of the repository that runs on the same
// cluster as the one checked (issue 54 item 4): a root nested in its
// directory, or the root whose tree applies the FluxInstance (or the
// flux-instance values) declaring it — a migration from a Taskfile root
// to the Flux Operator keeps both. What it renders exists on that
// cluster too.
type liveRoot struct {
	path string
	env  *fluxrepo.Env
}

// liveWith are the indexes of the roots that run with roots[i] on one
// cluster: either brings the other up (fluxrepo.Root.Brings).
func liveWith(roots []fluxrepo.Root, i int) []int {
	var out []int
	for j, r := range roots {
		if j != i && (roots[i].Brings(r) || r.Brings(roots[i])) {
			out = append(out, j)
		}
	}
	return out
}

// shareLive adds to g what the live roots render: their sources are
// rendered on the cluster, and a dependsOn on one of their Kustomizations
// or HelmReleases is no dangling edge. It returns the evidence.
func shareLive(g *fluxgraph.Graph, live []liveRoot) []string {
	if len(live) == 0 {
		return nil
	}
	var ev []string
	names := make([]string, 0, len(live))
	for _, l := range live {
		names = append(names, l.path)
		for _, src := range l.env.Sources {
			g.Rendered[src.Ref] = true
		}
		for _, gr := range l.env.GitRepositories {
			g.Rendered[fluxobj.Ref{Kind: fluxobj.GitRepositoryKind, Namespace: gr.Namespace, Name: gr.Name}] = true
		}
	}
	g.Dangling = slices.DeleteFunc(g.Dangling, func(e fluxgraph.Edge) bool {
		for _, l := range live {
			if rendersNode(l.env, e.To) {
				ev = append(ev, fmt.Sprintf("%s depends on %s, which root %s renders on the same cluster", e.From, e.To, l.path))
				return true
			}
		}
		return false
	})
	return append([]string{fmt.Sprintf("judged with root(s) %s, which run on the same cluster: their sources, Kustomizations and HelmReleases count as rendered", strings.Join(names, ", "))}, ev...)
}

// rendersNode says whether env renders the Kustomization or HelmRelease id.
func rendersNode(env *fluxrepo.Env, id fluxgraph.NodeID) bool {
	if id.IsHelmRelease() {
		return slices.ContainsFunc(env.HelmReleases, func(h *fluxrepo.HelmRelease) bool {
			return h.Namespace == id.Namespace && h.Name == id.Name
		})
	}
	return env.Kustomization(id.Namespace, id.Name) != nil
}

// liveSource says whether a live root renders the source src.
func liveSource(live []liveRoot, src fluxobj.Ref) bool {
	for _, l := range live {
		for _, s := range l.env.Sources {
			if s.Ref == src {
				return true
			}
		}
		for _, gr := range l.env.GitRepositories {
			if src.Kind == fluxobj.GitRepositoryKind && gr.Namespace == src.Namespace && gr.Name == src.Name {
				return true
			}
		}
	}
	return false
}
