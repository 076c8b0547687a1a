package check

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Clusters is the gate that says which cluster roots a check without a
// path found, and how.
var Clusters = verify.Def{ID: "check.clusters", Phase: PhaseName, Stage: verify.Before,
	Title: "every cluster root the repository declares is found, and each is checked"}

// ClusterPrefix is what the IDs of a cluster's checks begin with in a
// check of several clusters: its path with each "/" written as "." (a
// report groups a gate's checks by what precedes the first "/"), then
// ":" — clusters/dev's check.render is clusters.dev:check.render.
func ClusterPrefix(root string) string {
	return strings.ReplaceAll(root, "/", ".") + ":"
}

// Every is the static phase over every cluster root a repository
// declares (check without --env or --path): each root is checked by
// itself, as Phase checks one, into one report. Its gates are
// check.clusters, then each root's gates with ClusterPrefix before their
// IDs. A root whose directory does not build is that cluster's
// check.render failure, not the run's input error: the user named no
// root, and the other clusters are still checked.
type Every struct {
	pipeline.Base
	// Options are the check's, Path aside (each root's).
	Options Options
	// Roots are the roots found (fluxrepo.Discover), Notes what the
	// search passed over.
	Roots []fluxrepo.Root
	Notes []string
	// Result is set by Before: every root's checks and findings, each
	// gate prefixed (for SARIF).
	Result *Result
}

// Name is "static".
func (e *Every) Name() string { return PhaseName }

// Gates are check.clusters and every root's gates, prefixed.
func (e *Every) Gates() []verify.Def {
	out := []verify.Def{Clusters}
	for _, r := range e.Roots {
		for _, g := range Gates() {
			g.ID = ClusterPrefix(r.Path) + g.ID
			out = append(out, g)
		}
	}
	return out
}

// Before checks each root in turn. Only what concerns every root stops
// the run as an input error: the policy file.
func (e *Every) Before(ctx context.Context, run *pipeline.Run) ([]verify.Check, error) {
	o := e.Options
	if o.Policy == nil {
		p, err := LoadPolicy(o.Repo)
		if err != nil {
			return nil, err
		}
		o.Policy = p
	}
	if o.Bootstrap == nil {
		// Read once for every root.
		b, err := bootstrapfiles.Read(o.Repo)
		if err != nil {
			return nil, err
		}
		o.Bootstrap = b
	}
	out := []verify.Check{e.found()}
	out[0].Evidence = append(out[0].Evidence, o.Bootstrap.Evidence()...)
	e.Result = &Result{Checks: out}
	var paths []string
	// Each cluster compares its knobs with its siblings: loaded once for
	// all the roots, not once per root.
	o.siblings = map[string]sibling{}
	// And every load copies the repository once: the copy is kept
	// between them (fluxrepo.Copies).
	if o.Copies == nil {
		o.Copies = fluxrepo.NewCopies()
		defer o.Copies.Close() //nolint:errcheck // a temporary directory
	}
	o.Options = shareBuilds(o.Options)
	envs := e.liveEnvs(o)
	for i, r := range e.Roots {
		if ctx.Err() != nil {
			break // the pipeline reports the interrupt
		}
		paths = append(paths, r.Path)
		oo := o
		oo.Path = r.Path
		// Each root by its own name: a self-applying root's (flux-system/
		// cluster), the default's otherwise.
		if r.Name != "" {
			oo.Namespace, oo.RootName = r.Namespace, r.Name
		}
		// Roots running on one cluster are judged together: each with
		// what the others render.
		if envs[i] != nil {
			oo.Env = envs[i]
			for _, j := range liveWith(e.Roots, i) {
				if envs[j] != nil {
					oo.live = append(oo.live, liveRoot{path: e.Roots[j].Path, env: envs[j]})
				}
			}
		}
		p := &Phase{Options: oo}
		cs, err := p.Before(ctx, run)
		if err != nil {
			cs = []verify.Check{Render.Fail(fmt.Sprintf("%s: %v; the other clusters are checked", r.Path, err))}
			cs = append(cs, verify.Missing(Gates(), cs, "not run: "+r.Path+" does not build")...)
		}
		prefix := ClusterPrefix(r.Path)
		for i := range cs {
			cs[i].ID = prefix + cs[i].ID
		}
		out = append(out, cs...)
		if p.Result != nil {
			for _, f := range p.Result.Findings {
				f.Gate = prefix + f.Gate
				e.Result.Findings = append(e.Result.Findings, f)
			}
			run.Report.Facts["fluxRelease."+r.Path] = p.Result.Release.String()
		}
	}
	delete(run.Report.Facts, "fluxRelease") // each cluster's is above
	run.Report.Facts["clusters"] = strings.Join(paths, ", ")
	e.Result.Checks = out
	return out, nil
}

// liveEnvs loads, once each, the roots that run on one cluster with
// another (liveWith); nil for the others, which their check loads, and for
// a root that does not load (its check reports it).
func (e *Every) liveEnvs(o Options) []*fluxrepo.Env {
	envs := make([]*fluxrepo.Env, len(e.Roots))
	for i, r := range e.Roots {
		if len(liveWith(e.Roots, i)) == 0 {
			continue
		}
		lo := o.Options
		lo.Path, lo.KeepGoing, lo.Holes = r.Path, true, true
		if r.Name != "" {
			lo.Namespace, lo.RootName = r.Namespace, r.Name
		}
		if env, err := fluxrepo.Load(lo); err == nil {
			envs[i] = env
		}
	}
	return envs
}

// found is check.clusters: which roots, and how each was found.
func (e *Every) found() verify.Check {
	var roots, ev []string
	for _, r := range e.Roots {
		var by []string
		for _, d := range r.By {
			by = append(by, d.String())
		}
		// The model reads a root in the directory or a FluxInstance's; one
		// applied by hand from elsewhere is not in it (check.graph then
		// says the path's root is made outside it).
		if !slices.ContainsFunc(r.By, func(d fluxrepo.Declaration) bool { return d.Form != fluxrepo.FormHandApplied }) {
			by = append(by, "its directory checked as a path whose root is made outside it")
		}
		if slices.ContainsFunc(r.By, func(d fluxrepo.Declaration) bool { return d.Form == fluxrepo.FormSelfApplying }) {
			by = append(by, "root "+r.Namespace+"/"+r.Name)
		}
		roots = append(roots, fmt.Sprintf("%s (%s)", r.Path, strings.Join(by, "; ")))
		ev = append(ev, fmt.Sprintf("%s: checked as %scheck.*, found by %s", r.Path, ClusterPrefix(r.Path), strings.Join(by, "; ")))
	}
	for _, n := range e.Notes {
		ev = append(ev, "note: "+n)
	}
	return Clusters.Pass(fmt.Sprintf("%d cluster root(s) found, each checked by itself: %s", len(e.Roots), strings.Join(roots, ", ")), ev...)
}

var _ pipeline.Phase = (*Every)(nil)
