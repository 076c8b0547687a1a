package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// checkGraph is check.graph: it runs the table's graph detectors — those
// of the whole environment, then those of each of fluxgraph's problems in
// the graph's order, then those run after — on one graphScan.
func checkGraph(ch *checker, o Options, env *fluxrepo.Env, g *fluxgraph.Graph) verify.Check {
	gs := newGraphScan(o, env, g)
	var fs []finding
	each := func(after bool) {
		for _, d := range detectors {
			if d.graph != nil && d.after == after && o.on(d.ID) {
				fs = append(fs, d.graph(gs)...)
			}
		}
	}
	each(false)
	for _, p := range g.Problems() {
		for _, d := range detectors {
			if d.problem != nil && o.on(d.ID) {
				fs = append(fs, d.problem(gs, p)...)
			}
		}
	}
	each(true)
	if gs.root == nil && len(dependsOnRoot(env)) == 0 {
		// No root here and nothing here waits for one: a path whose root
		// is made elsewhere (a tenant path, a fleet's ResourceSet).
		noRootNote := fmt.Sprintf("no root here: %s renders no Kustomization %s, nothing declares one, and no Kustomization here depends on it — checked as a path whose root is made elsewhere (a tenant path, a fleet's ResourceSet); to check it as a root applies it, declare that root with --source-url URL (bootstrap up/sync --source-kind GitRepository --source-url URL create the GitRepository and the Kustomization %s applying ./%s)", gs.path, gs.rootRef, gs.rootRef, gs.path)
		return ch.verdict(Graph, fs, fmt.Sprintf("%d Kustomization(s), no cycle, every dependsOn rendered", len(env.Kustomizations))+helmSummary(env)+"; "+noRootNote)
	}
	return ch.verdict(Graph, fs, fmt.Sprintf("root %s (%s) applies %s; %d Kustomization(s), no cycle, every dependsOn rendered, every node reachable from the root", gs.rootRef, env.Origin, gs.path, len(env.Kustomizations))+helmSummary(env))
}

// graphScan is what the detectors of check.graph read: the environment,
// its graph, the root and what did not build.
type graphScan struct {
	o        Options
	env      *fluxrepo.Env
	g        *fluxgraph.Graph
	root     *fluxrepo.Kustomization
	path     string // the environment's directory
	rootRef  string // namespace/name of the root Kustomization
	kustFile string // the directory's kustomization.yaml
	// unbuilt names the Kustomizations whose path did not build
	// (failedBuilds), "" when every path built.
	unbuilt string
}

func newGraphScan(o Options, env *fluxrepo.Env, g *fluxgraph.Graph) *graphScan {
	path := env.Options.Path
	return &graphScan{o: o, env: env, g: g, root: env.Root, path: path,
		rootRef:  env.Options.Namespace + "/" + env.Options.RootName,
		kustFile: path + "/kustomization.yaml", unbuilt: failedBuilds(env)}
}

// failedBuilds names the Kustomizations whose path did not build ([build]),
// "" when every path built: what they would apply is unknown.
func failedBuilds(env *fluxrepo.Env) string {
	var out []string
	for _, k := range env.Kustomizations {
		switch {
		case k.Err != nil && len(k.Repaired) > 0 && !slices.ContainsFunc(k.Repaired, func(h *fluxrepo.Hole) bool { return !h.Absent }):
			// Built without entries naming files the artifact does not
			// hold: they render nothing, so what it renders is known.
		case k.Err != nil && len(k.OnceFixed) > 0:
			// Repaired: built without its broken entries, which may hold it.
			out = append(out, k.Ref()+" (built without the broken entries of "+strings.Join(k.OnceFixed, ", ")+")")
		case k.Err != nil:
			out = append(out, k.Ref())
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "Kustomization " + strings.Join(out, ", ")
}

func helmSummary(env *fluxrepo.Env) string {
	if len(env.HelmReleases) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d HelmRelease(s), each dependsOn a rendered HelmRelease, each chart source rendered", len(env.HelmReleases))
}

// nodeLocation is where the first of ids is declared.
func nodeLocation(env *fluxrepo.Env, ids ...fluxgraph.NodeID) fluxrepo.Location {
	if len(ids) == 0 {
		return fluxrepo.Location{}
	}
	id := ids[0]
	if id.IsHelmRelease() {
		if hr := env.HelmRelease(id.Namespace, id.Name); hr != nil {
			return hr.Location
		}
		return fluxrepo.Location{}
	}
	if k := env.Kustomization(id.Namespace, id.Name); k != nil {
		return k.Location
	}
	return fluxrepo.Location{}
}
