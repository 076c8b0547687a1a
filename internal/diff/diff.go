// Package diff is `bootstrap diff` (issue #47): what a change does to each
// cluster a repository declares. Both revisions are read from the Git
// object store in-process (internal/gitrev), each loaded with the one
// repository model (internal/fluxrepo: every Kustomization built as
// kustomize-controller builds it), every object substituted as the
// release's kustomize-controller substitutes it, then compared per
// Kustomization, keyed by group/kind/namespace/name after substitution:
// objects added, removed (and whether prune deletes them), changed (a
// unified diff, secret values redacted), what the controllers will do
// about each, and the window between the commits — a reader of a changed
// substituteFrom knob rendered with the knob as it was, when nothing
// makes it wait for the Kustomization applying it.
package diff

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/equality"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/chartrender"
	"github.com/homelab-ops/bootstrap/internal/check"
	"github.com/homelab-ops/bootstrap/internal/fluxrelease"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/gitrev"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Options select the repository, the clusters and the revisions.
type Options struct {
	// Repo is the repository's directory (its work tree, or a directory
	// inside it).
	Repo string
	// Path is the one cluster root to compare ("": every root either
	// revision declares, fluxrepo.Discover).
	Path string
	// Namespace and RootName name the root Kustomization (default
	// flux-system/flux-system).
	Namespace, RootName string
	// AdoptRoot: Namespace and RootName are defaults, not chosen; a
	// cluster root whose one self-applying root Kustomization has another
	// name (the Taskfile layout's flux-system/cluster) is compared as that
	// root (fluxrepo.Options.AdoptRoot), as check does.
	AdoptRoot bool
	// Base and Head are revisions (a branch, tag, commit, HEAD~1). Base ""
	// is the merge-base of HEAD with the default branch, or HEAD when the
	// work tree is dirty (gitrev.DefaultBase); Head "" is the work tree.
	Base, Head string
	// FluxVersion judges both revisions by this Flux release ("": the one
	// each declares, as check does).
	FluxVersion string

	// Charts, when set (--charts), renders the chart of every HelmRelease
	// installed or upgraded at both revisions (charts.go); the network is
	// used only then.
	Charts  *chartrender.Options
	fetcher *chartrender.Fetcher
	// noBuildReuse builds every Kustomization at both revisions (tests:
	// the diff is the same with and without reuse).
	noBuildReuse bool
}

// Revision is one side of the diff.
type Revision struct {
	// Rev is the revision as given or chosen; "work tree" for the work tree.
	Rev string `json:"rev"`
	// Commit is the full hash ("" for the work tree).
	Commit string `json:"commit,omitempty"`
	// Why says how a default was chosen.
	Why string `json:"why,omitempty"`
}

func (r Revision) String() string {
	s := r.Rev
	if r.Commit != "" && r.Commit != r.Rev {
		s += " (" + r.Commit[:12] + ")"
	}
	return s
}

// Result is the diff of every cluster.
type Result struct {
	Base     Revision   `json:"base"`
	Head     Revision   `json:"head"`
	Clusters []*Cluster `json:"clusters"`
	Notes    []string   `json:"notes,omitempty"`
}

// Failed says a Kustomization (or a cluster's root directory) fails to
// build at head: the exit code 1.
func (r *Result) Failed() bool {
	return slices.ContainsFunc(r.Clusters, func(c *Cluster) bool { return c.Failed() })
}

// Changed says any cluster changes.
func (r *Result) Changed() bool {
	return slices.ContainsFunc(r.Clusters, func(c *Cluster) bool { return c.Change != Unchanged })
}

// Cluster is one cluster root's diff.
type Cluster struct {
	Path string `json:"path"`
	// Change: added, removed, changed or unchanged.
	Change string `json:"change"`
	// Fail is why the root directory does not load at head.
	Fail string `json:"fail,omitempty"`
	// Substitution is the head release's mode ("strict" or "not strict")
	// and why.
	Substitution   string           `json:"substitution,omitempty"`
	Kustomizations []*Kustomization `json:"kustomizations,omitempty"`
	Windows        []*Window        `json:"windows,omitempty"`
	// Moves are the objects one Kustomization hands over to another.
	Moves []*Move  `json:"moves,omitempty"`
	Notes []string `json:"notes,omitempty"`
	// Charts are the rendered charts' diffs (--charts).
	Charts []*Chart `json:"charts,omitempty"`
}

// Failed says the cluster fails at head: its root, or a Kustomization.
func (c *Cluster) Failed() bool {
	return c.Fail != "" || slices.ContainsFunc(c.Kustomizations, func(k *Kustomization) bool { return k.Fail != "" })
}

// Kustomization is one Flux Kustomization's diff.
type Kustomization struct {
	// Ref is namespace/name.
	Ref string `json:"kustomization"`
	// Change: added, removed, changed (or unchanged, when it fails).
	Change string `json:"change"`
	// Prune is spec.prune (at head; at base for a removed one).
	Prune bool `json:"prune"`
	// Fail is check's [build] finding, or the controller's post-build
	// error, when it does not apply at head.
	Fail    string    `json:"fail,omitempty"`
	Note    string    `json:"note,omitempty"`
	Objects []*Object `json:"objects,omitempty"`
}

// side is one revision loaded.
type side struct {
	env  *fluxrepo.Env
	sub  substitution
	rend map[string]*rendered // by Kustomization ref
	rd   *objReads            // shared by both sides of a cluster
}

// Run compares the revisions. Errors are input errors (verify.InputError)
// for what the user gave: not a repository, an unknown revision, a path
// neither revision has, no cluster root.
func Run(ctx context.Context, o Options) (*Result, error) {
	g, err := gitrev.Open(o.Repo)
	if err != nil {
		return nil, err
	}
	var base gitrev.Commit
	if o.Base == "" {
		base, err = g.DefaultBase()
	} else {
		base, err = g.Resolve("--base", o.Base)
	}
	if err != nil {
		return nil, err
	}
	var head *gitrev.Commit
	if o.Head != "" {
		h, err := g.Resolve("--head", o.Head)
		if err != nil {
			return nil, err
		}
		head = &h
	}
	res := &Result{Base: Revision{Rev: base.Rev, Commit: base.Hash.String(), Why: base.Why}, Head: Revision{Rev: "work tree"}}
	baseDir, headDir, baseNotes, headNotes, cleanup, err := extract(g, base, head)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	if head != nil {
		res.Head = Revision{Rev: head.Rev, Commit: head.Hash.String()}
		res.Notes = append(res.Notes, revisionNotes(baseNotes, headNotes)...)
	} else {
		headDir = o.Repo
		res.Notes = append(res.Notes, prefixed("base: ", baseNotes)...)
	}
	fo := fluxrepo.Options{Namespace: o.Namespace, RootName: o.RootName, KeepGoing: true, Holes: true, AdoptRoot: o.AdoptRoot}
	roots, err := clusterRoots(o, fo, baseDir, headDir)
	if err != nil {
		return nil, err
	}
	red := newRedactor()
	// Whether the revisions may load concurrently (cluster), once per run.
	serial := fluxrepo.SetsOpenAPI(baseDir) || fluxrepo.SetsOpenAPI(headDir)
	if o.Charts != nil {
		if o.fetcher, err = chartrender.NewFetcher(*o.Charts); err != nil {
			return nil, verify.InputErrorf("%v", err)
		}
		defer o.fetcher.Close()
	}
	for i, root := range roots {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// The trees written from the object store are private: the last
		// root's loads take them over (fluxrepo.LoadInPlace) rather than
		// copy them again; earlier roots' loads copy them, as the tree
		// must stay as committed for the next root. The work tree is
		// always copied.
		last := i == len(roots)-1
		own := owned{base: last, head: last && head != nil}
		c, err := cluster(ctx, o, fo, root, baseDir, headDir, serial, own, red)
		if err != nil {
			return nil, err
		}
		res.Clusters = append(res.Clusters, c)
	}
	return res, nil
}

// extract writes the trees of base and head (nil: the work tree, not
// written) at once, head through a handle of its own (gitrev.Reopen); the
// cleanup removes both, side by side.
func extract(g *gitrev.Repo, base gitrev.Commit, head *gitrev.Commit) (baseDir, headDir string, baseNotes, headNotes []string, cleanup func(), err error) {
	var cleanBase, cleanHead func()
	var berr, herr error
	var wg sync.WaitGroup
	wg.Go(func() { baseDir, baseNotes, cleanBase, berr = g.Extract(base, gitrev.Limits{}) })
	if head != nil {
		wg.Go(func() {
			gh, err := g.Reopen()
			if err != nil {
				herr = err
				return
			}
			headDir, headNotes, cleanHead, herr = gh.Extract(*head, gitrev.Limits{})
		})
	}
	wg.Wait()
	err = cmp.Or(berr, herr) // base's first, whichever failed sooner
	cleanup = func() {
		var wg sync.WaitGroup
		for _, c := range []func(){cleanBase, cleanHead} {
			if c != nil {
				wg.Go(c)
			}
		}
		wg.Wait()
	}
	if err != nil {
		cleanup()
		return "", "", nil, nil, nil, err
	}
	return baseDir, headDir, baseNotes, headNotes, cleanup, nil
}

// revisionNotes are the notes of writing each revision's tree, a note
// both revisions give said once.
func revisionNotes(base, head []string) []string {
	var out []string
	for _, n := range base {
		if slices.Contains(head, n) {
			out = append(out, "both revisions: "+n)
		} else {
			out = append(out, "base: "+n)
		}
	}
	for _, n := range head {
		if !slices.Contains(base, n) {
			out = append(out, "head: "+n)
		}
	}
	return out
}

func prefixed(p string, notes []string) []string {
	out := make([]string, len(notes))
	for i, n := range notes {
		out[i] = p + n
	}
	return out
}

// clusterRoots is o.Path, or every root either revision declares.
func clusterRoots(o Options, fo fluxrepo.Options, baseDir, headDir string) ([]string, error) {
	if o.Path != "" {
		if !isDir(filepath.Join(baseDir, o.Path)) && !isDir(filepath.Join(headDir, o.Path)) {
			return nil, verify.InputErrorf("--path %s: a directory at neither revision: pass a cluster root of the repository (e.g. clusters/dev)", o.Path)
		}
		return []string{o.Path}, nil
	}
	set := map[string]bool{}
	for _, dir := range []string{baseDir, headDir} {
		rs, _, err := fluxrepo.Discover(dir, fo)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			set[r.Path] = true
		}
	}
	if len(set) == 0 {
		return nil, verify.InputErrorf("no cluster root found in %s at either revision: pass --path DIR (or --env NAME for clusters/NAME); %s", o.Repo, fluxrepo.DiscoverLooksFor(fo))
	}
	out := make([]string, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// owned says which revisions' trees a cluster's loads may take over:
// private trees gitrev wrote, read by nothing after them.
type owned struct{ base, head bool }

// load loads one revision's cluster root; nil when the revision lacks
// the directory. inPlace: dir is a private tree no one reads after this
// load, loaded in place (fluxrepo.LoadInPlace: written once, not copied).
// The side reads its objects through rd (nil: each anew).
func load(ctx context.Context, o Options, fo fluxrepo.Options, dir, root string, inPlace bool, rd *objReads) (*side, error) {
	if !isDir(filepath.Join(dir, root)) {
		return nil, nil
	}
	fo.Repo, fo.Path = dir, root
	// Read before an in-place load takes the tree over.
	b, err := bootstrapfiles.Read(dir)
	if err != nil {
		return nil, err
	}
	loadEnv := fluxrepo.Load
	if inPlace {
		loadEnv = fluxrepo.LoadInPlace
	}
	env, err := loadEnv(fo)
	if err != nil {
		return nil, err
	}
	// Substituted as the release's kustomize-controller does, the one
	// check judges by.
	_, kc, err := fluxrelease.Deployed(ctx, env, o.FluxVersion, "--flux-version", b)
	if err != nil {
		return nil, err
	}
	return &side{env: env, sub: substitution{strict: kc.Strict.On, why: kc.Strict.Why}, rend: map[string]*rendered{}, rd: rd}, nil
}

// loadSides loads root at both revisions at once: base recording its
// builds, head taking each build whose inputs answer the same at head
// (fluxrepo.Builds) and waiting for one base runs or has yet to try
// (Builds.Live). serial: one after the other (a revision sets openapi:).
// Both sides read their objects through rd. baseLoaded is called with base
// as soon as it loaded (not after a failed load), while head loads.
func loadSides(ctx context.Context, o Options, fo fluxrepo.Options, root, baseDir, headDir string, serial bool, own owned, rd *objReads, baseLoaded func(*side)) (b, h *side, berr, herr error) {
	// Each fluxrepo.Load works on a private copy of its own tree (or,
	// LoadInPlace, on the private tree itself), and what they share is
	// synchronized (the embedded releases' schemas, crdschema; kustomize's
	// built-in OpenAPI schema, kyaml/openapi's schemaLock; the record of
	// builds). Not when a revision sets openapi: in a kustomization file:
	// fluxrepo then builds with fluxkustomize.Build, which swaps
	// kustomize's process-global schema around each build (under a lock of
	// its own that fluxrepo's other builds do not take), so a concurrent
	// build of the other revision could see that schema: they load one
	// after the other.
	bfo, hfo := fo, fo
	finish := func() {}
	if !o.noBuildReuse {
		builds := fluxrepo.NewBuilds()
		bfo.RecordBuilds, hfo.ReuseBuilds = builds, builds
		if !serial {
			finish = builds.Live()
		}
	}
	loadBase := func() {
		defer finish()
		if b, berr = load(ctx, o, bfo, baseDir, root, own.base, rd); berr == nil && b != nil {
			baseLoaded(b)
		}
	}
	loadHead := func() { h, herr = load(ctx, o, hfo, headDir, root, own.head, rd) }
	if serial {
		loadBase()
		loadHead()
		return b, h, berr, herr
	}
	// The loads' errors are berr and herr, judged apart by the caller.
	var wg sync.WaitGroup
	wg.Go(loadBase)
	wg.Go(loadHead)
	wg.Wait()
	return b, h, berr, herr
}

// cluster compares one root.
func cluster(ctx context.Context, o Options, fo fluxrepo.Options, root, baseDir, headDir string, serial bool, own owned, red *redactor) (*Cluster, error) {
	c := &Cluster{Path: root}
	// Base renders (substitutes) as soon as it is loaded: what base
	// renders does not wait for head.
	var brg errgroup.Group
	b, h, berr, herr := loadSides(ctx, o, fo, root, baseDir, headDir, serial, own, newObjReads(), func(b *side) {
		brg.Go(func() error { return b.renderAll(ctx, nil) })
	})
	if err := brg.Wait(); err != nil {
		return nil, err
	}
	if berr != nil {
		// The base does not load: everything at head is compared with nothing.
		c.Notes = append(c.Notes, fmt.Sprintf("base: %s does not load (%v): compared with nothing", root, berr))
		b = nil
	}
	if err := herr; err != nil {
		if verify.IsInput(err) && o.Path != "" && b == nil {
			return nil, err
		}
		c.Change, c.Fail = Changed, fmt.Sprintf("%s does not load at head: %v", root, err)
		return c, nil
	}
	switch {
	case h == nil:
		c.Change = Removed
		c.Notes = append(c.Notes, root+" is not in the head revision: what the cluster runs is no longer in the repository")
		return c, nil
	case b == nil:
		b = &side{rend: map[string]*rendered{}}
		c.Change = Added
	}
	if h.env.RootErr != nil {
		// kustomize-controller fails the root Kustomization (BuildFailed):
		// nothing of the root directory is applied at head.
		c.Fail = fmt.Sprintf("the root directory %s does not build at head: %v", root, h.env.RootErr)
	}
	if b.env != nil && b.env.RootErr != nil {
		c.Notes = append(c.Notes, fmt.Sprintf("base: the root directory did not build (%v): compared as built without the entries that broke it", b.env.RootErr))
	}
	if n := len(h.env.Holes); n > 0 {
		c.Notes = append(c.Notes, fmt.Sprintf("%d entr(ies) cannot be read offline (a remote resource, base or generator file; a file over the read bound), left out at both revisions: what they add is not compared (bootstrap check lists them)", n))
	}
	c.Substitution = fluxrelease.Strictness{On: h.sub.strict}.Mode() + ": " + h.sub.why
	// Base rendered while head loaded. A Kustomization whose inputs are
	// the same at both revisions is rendered once, at base, and that
	// render is head's too (reused).
	same := sameInputs(b, h)
	if err := h.renderAll(ctx, same); err != nil {
		return nil, err
	}
	for ref := range same {
		h.rend[ref] = b.rend[ref]
	}
	if err := c.compare(ctx, b, h, red); err != nil {
		return nil, err
	}
	if err := c.attachValues(ctx, b, h, red); err != nil {
		return nil, err
	}
	c.moves()
	if b.env != nil {
		ws, err := windows(ctx, b, h, red)
		if err != nil {
			return nil, err
		}
		c.Windows = ws
	}
	if o.fetcher != nil {
		c.Charts = chartDiffs(ctx, o.fetcher, c, b, h, red)
	}
	if c.Change == "" {
		c.Change = Unchanged
		if len(c.Kustomizations) > 0 || len(c.Windows) > 0 {
			c.Change = Changed
		}
	}
	return c, nil
}

// renderOf is k's render at side s (cached).
func (s *side) renderOf(ctx context.Context, k *fluxrepo.Kustomization) (*rendered, error) {
	if r, ok := s.rend[k.Ref()]; ok {
		return r, nil
	}
	r, err := s.renderNew(ctx, k)
	if err != nil {
		return nil, err
	}
	s.rend[k.Ref()] = r
	return r, nil
}

// renderNew is k's render at side s, not cached.
func (s *side) renderNew(ctx context.Context, k *fluxrepo.Kustomization) (*rendered, error) {
	switch {
	case k.Err != nil:
		return &rendered{fail: check.BuildFailure(s.env, k)}, nil
	case !k.Built:
		return &rendered{}, nil
	}
	return render(ctx, s.env, nil, k, s.sub, s.rd)
}

// renderAll renders every Kustomization of s into its cache, but those
// of skip, side by side (eachOf).
func (s *side) renderAll(ctx context.Context, skip map[string]bool) error {
	if s.env == nil {
		return nil
	}
	var todo []*fluxrepo.Kustomization
	queued := map[string]bool{}
	for _, k := range s.env.Kustomizations {
		ref := k.Ref()
		if _, done := s.rend[ref]; !done && !skip[ref] && !queued[ref] {
			todo, queued[ref] = append(todo, k), true // the first of a ref, as renderOf keeps it
		}
	}
	out := make([]*rendered, len(todo))
	err := eachOf(ctx, len(todo), func(i int) (err error) {
		out[i], err = s.renderNew(ctx, todo[i])
		return err
	})
	if err != nil {
		return err
	}
	for i, k := range todo {
		s.rend[k.Ref()] = out[i]
	}
	return nil
}

func (s *side) kustomizations() map[string]*fluxrepo.Kustomization {
	out := map[string]*fluxrepo.Kustomization{}
	if s.env == nil {
		return out
	}
	for _, k := range s.env.Kustomizations {
		if _, dup := out[k.Ref()]; !dup {
			out[k.Ref()] = k
		}
	}
	return out
}

// compare fills c.Kustomizations: one per Kustomization added, removed,
// changed or failing at head.
func (c *Cluster) compare(ctx context.Context, b, h *side, red *redactor) error {
	bk, hk := b.kustomizations(), h.kustomizations()
	refs := map[string]bool{}
	for r := range bk {
		refs[r] = true
	}
	for r := range hk {
		refs[r] = true
	}
	names := make([]string, 0, len(refs))
	for r := range refs {
		names = append(names, r)
	}
	sort.Strings(names)
	// Every render first (head's: a changed ConfigMap or chart source
	// upgrades HelmReleases other Kustomizations apply); then each
	// Kustomization's comparison, side by side, gathered in order.
	if err := h.renderAll(ctx, nil); err != nil {
		return err
	}
	if err := b.renderAll(ctx, nil); err != nil {
		return err
	}
	hrs := helmReleases(h.rend)
	outs := make([]*Kustomization, len(names))
	err := eachOf(ctx, len(names), func(i int) error {
		ref := names[i]
		outs[i] = compareOne(b, h, ref, bk[ref], hk[ref], hrs, red)
		return nil
	})
	if err != nil {
		return err
	}
	for _, out := range outs {
		if out != nil {
			c.Kustomizations = append(c.Kustomizations, out)
		}
	}
	return nil
}

// compareOne is the comparison of the Kustomization ref at base (kb) and
// head (kh), both rendered; nil when there is nothing to say.
func compareOne(b, h *side, ref string, kb, kh *fluxrepo.Kustomization, hrs []*helmv2.HelmRelease, red *redactor) *Kustomization {
	out := &Kustomization{Ref: ref}
	var br, hr *rendered
	if kb != nil {
		br = b.rend[ref]
	}
	if kh != nil {
		hr = h.rend[ref]
	}
	switch {
	case kh == nil:
		// Deleted from the cluster when its applier prunes it; its
		// finalizer then garbage-collects what it applied when its own
		// spec.prune is true (kustomize-controller v1.9.x,
		// kustomization_controller.go finalize).
		out.Change, out.Prune = Removed, kb.Spec.Prune && appliedPruned(b, h, kb)
		out.Objects = compareObjects(br.objs, nil, out.Prune, red)
		if !out.Prune {
			out.Note = "its objects stay on the cluster: its applier does not prune it, or its own spec.prune is false"
		}
	case kb == nil:
		out.Change, out.Prune = Added, kh.Spec.Prune
		if hr.fail != "" {
			out.Fail = hr.fail
			break
		}
		out.Objects = compareObjects(nil, hr.objs, kh.Spec.Prune, red)
		if !kh.Built {
			out.Note = kh.Note
		}
	default:
		out.Change, out.Prune = Changed, kh.Spec.Prune
		if hr.fail != "" {
			out.Fail = hr.fail
			break
		}
		if !kh.Built {
			return nil // another source, a path with a variable: noted by check
		}
		if br == hr {
			return nil // the same inputs, one render (sameInputs)
		}
		if br.fail != "" {
			out.Note = "it did not apply at base (" + firstLine(br.fail) + "): compared with nothing"
		}
		out.Objects = compareObjects(br.objs, hr.objs, kh.Spec.Prune, red)
		if len(out.Objects) == 0 {
			return nil
		}
		for _, o := range out.Objects {
			if o.Change == Changed {
				if fx := helmEffects(o.Key, br.objs[o.Key], hr.objs[o.Key], hrs); len(fx) > 0 {
					o.Action += "; " + strings.Join(fx, "; ")
				}
			}
		}
	}
	return out
}

// appliedPruned says the Kustomization kb (removed at head) is deleted
// from the cluster: its applier at head prunes, and kb does not opt out.
func appliedPruned(b, h *side, kb *fluxrepo.Kustomization) bool {
	if kb.AppliedBy == "" {
		return false // the root directory renders it: nothing applies it
	}
	ns, name, _ := strings.Cut(kb.AppliedBy, "/")
	ap := h.env.Kustomization(ns, name)
	if ap == nil {
		ap = b.env.Kustomization(ns, name)
	}
	if ap == nil || !ap.Spec.Prune {
		return false
	}
	key := "kustomize.toolkit.fluxcd.io/prune"
	return kb.Labels[key] != "disabled" && kb.Annotations[key] != "disabled"
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// sameInputs are the Kustomizations whose render is the same at both
// revisions because everything render reads is: built at both, the
// Kustomization object itself (its postBuild, its strategy), the objects
// its build made (kyaml node by node), each substituteFrom object as the
// environment renders it (absent, open, encrypted, its values) and the
// substitution mode. What fluxrepo.Load reads to build them (the files,
// the directory listings a generated kustomization.yaml lists) is behind
// the built objects: equal objects, whatever the files.
func sameInputs(b, h *side) map[string]bool {
	out := map[string]bool{}
	if b.env == nil || h.env == nil || b.sub.strict != h.sub.strict {
		return out
	}
	bk := b.kustomizations()
	for ref, kh := range h.kustomizations() {
		kb := bk[ref]
		if !sameBuild(kb, kh) {
			continue
		}
		same := true
		if kh.Substitutes() {
			for _, ref := range kh.Spec.PostBuild.SubstituteFrom {
				key := fluxrepo.DataKey(ref.Kind, kh.Namespace, ref.Name)
				if !sameData(b.env.Data[key], h.env.Data[key]) {
					same = false
					break
				}
			}
		}
		if same {
			out[ref] = true
		}
	}
	return out
}

// sameBuild says Kustomization kb (at base) and kh (at head) are the same
// object and built the same objects, kyaml node by node, in the same order.
func sameBuild(kb, kh *fluxrepo.Kustomization) bool {
	if kb == nil || kh == nil || !kb.Built || !kh.Built || kb.Err != nil || kh.Err != nil ||
		!equality.Semantic.DeepEqual(kb.Kustomization, kh.Kustomization) || len(kb.Resources) != len(kh.Resources) {
		return false
	}
	for i := range kh.Resources {
		if !sameNode(kb.Resources[i].YNode(), kh.Resources[i].YNode()) {
			return false
		}
	}
	return true
}

// sameData: both absent, or the same values, equally open and encrypted.
func sameData(a, b *fluxrepo.Data) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Open == b.Open && a.Encrypted == b.Encrypted && maps.Equal(a.Values, b.Values)
}

// sameNode compares two YAML trees: kinds, tags, styles, values, content.
func sameNode(a, b *kyaml.Node) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.Kind != b.Kind || a.Tag != b.Tag || a.Value != b.Value || a.Style != b.Style || len(a.Content) != len(b.Content) {
		return false
	}
	if (a.Alias == nil) != (b.Alias == nil) || (a.Alias != nil && !sameNode(a.Alias, b.Alias)) {
		return false
	}
	for i := range a.Content {
		if !sameNode(a.Content[i], b.Content[i]) {
			return false
		}
	}
	return true
}
