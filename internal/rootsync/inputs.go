package rootsync

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/agekey"
	"github.com/homelab-ops/bootstrap/internal/apply"
	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// InputsPhaseName is the inputs phase's name in reports.
const InputsPhaseName = "inputs"

// Gates of the inputs phase: what must be there before the root's first
// reconcile, checked before the run writes anything.
var (
	GateSeed         = verify.Def{ID: "inputs.seed", Phase: InputsPhaseName, Stage: verify.Before, Prefix: true, Title: "an object only the root applies and substitutes from is seeded from the repository"}
	GateSupplied     = verify.Def{ID: "inputs.supplied", Phase: InputsPhaseName, Stage: verify.Before, Prefix: true, Title: "an object given with --supply is valid and used"}
	GateRootInput    = verify.Def{ID: "inputs.root-substitute-from", Phase: InputsPhaseName, Stage: verify.Before, Prefix: true, Title: "every object the root substitutes from is in the cluster, seeded or supplied"}
	GateSupplyNeeded = verify.Def{ID: "inputs.prerequisite", Phase: InputsPhaseName, Stage: verify.Before, Prefix: true, Title: "an object made outside the repository that Kustomizations substitute from"}
)

// Inputs are what the sync writes before the root: the seeds and the
// supplied objects (their values never printed).
type Inputs struct {
	Seeds    []*Seed
	Supplied []*Supplied
}

// Seed is the seed of kind/namespace/name (nil: none).
func (in *Inputs) Seed(key string) *Seed {
	if in == nil {
		return nil
	}
	i := slices.IndexFunc(in.Seeds, func(s *Seed) bool { return s.Key() == key })
	if i < 0 {
		return nil
	}
	return in.Seeds[i]
}

// Supply is the supplied object kind/namespace/name (nil: none).
func (in *Inputs) Supply(key string) *Supplied {
	if in == nil {
		return nil
	}
	i := slices.IndexFunc(in.Supplied, func(s *Supplied) bool { return s.Key() == key })
	if i < 0 {
		return nil
	}
	return in.Supplied[i]
}

// has says whether key is seeded or supplied.
func (in *Inputs) has(key string) bool { return in.Seed(key) != nil || in.Supply(key) != nil }

// PrepareInputs selects the seeds of r's root (SelectSeeds), takes the
// supplied objects (a supplied object replaces the seed of the same
// object), and builds what dec can decrypt (dec nil: no key given; the
// inputs phase then reads the key the cluster holds). It refuses two
// supplied documents of one object. It runs before the first request.
func PrepareInputs(r *Render, supplied []*Supplied, dec Decrypter) error {
	in := &Inputs{}
	for _, s := range supplied {
		if o := in.Supply(s.Key()); o != nil {
			return verify.InputErrorf("%s is supplied twice: %s and %s; keep one", s.Key(), o.From, s.From)
		}
		in.Supplied = append(in.Supplied, s)
	}
	if r.Env != nil {
		for _, s := range SelectSeeds(r.Env) {
			if sp := in.Supply(s.Key()); sp != nil {
				s.SuppliedFrom = sp.From
			}
			in.Seeds = append(in.Seeds, s)
		}
	}
	r.Inputs = in
	if dec == nil {
		return in.buildPlain(r.Env)
	}
	return in.build(r.Env, dec)
}

// buildPlain builds what needs no key.
func (in *Inputs) buildPlain(env *fluxrepo.Env) error {
	for _, s := range in.Seeds {
		if !s.Encrypted && s.SuppliedFrom == "" {
			if err := s.build(env, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// build builds every seed and decrypts every supplied object with dec.
func (in *Inputs) build(env *fluxrepo.Env, dec Decrypter) error {
	for _, sp := range in.Supplied {
		if err := sp.Decrypt(dec); err != nil {
			return err
		}
	}
	for _, s := range in.Seeds {
		if s.Object != nil {
			continue
		}
		if s.SuppliedFrom != "" {
			u := in.Supply(s.Key()).Object.DeepCopy()
			if err := apply.AsKustomization([]*unstructured.Unstructured{u}, env.Root.Namespace, env.Root.Name); err != nil {
				return fmt.Errorf("%s (%s): %w", s.Key(), s.SuppliedFrom, err)
			}
			s.Object = u
			continue
		}
		if err := s.build(env, dec); err != nil {
			return err
		}
	}
	return nil
}

// pending says whether something still needs the key.
func (in *Inputs) pending() bool {
	return slices.ContainsFunc(in.Seeds, func(s *Seed) bool { return s.Object == nil }) ||
		slices.ContainsFunc(in.Supplied, func(s *Supplied) bool { return s.Object == nil })
}

// objects are the seeds and the supplied objects that are no seed, in
// that order, and the notes the plan gives them.
func (in *Inputs) objects() (seeds, other []*unstructured.Unstructured, notes map[string]string) {
	notes = map[string]string{}
	if in == nil {
		return nil, nil, notes
	}
	for _, s := range in.Seeds {
		seeds = append(seeds, s.Object)
		from := s.Location.File
		if s.SuppliedFrom != "" {
			from = s.SuppliedFrom
		}
		notes[apply.ID(s.Object)] = fmt.Sprintf("%s, from %s", SeedNote, from)
	}
	for _, sp := range in.Supplied {
		if in.Seed(sp.Key()) == nil {
			other = append(other, sp.Object)
			notes[apply.ID(sp.Object)] = fmt.Sprintf("%s by %s", SuppliedNote, sp.From)
		}
	}
	return seeds, other, notes
}

// NewInputsPhase is the inputs phase of up and sync, before anything is
// written (up runs it before the controllers phase): the seeds built (an
// encrypted one with the key given, or the one the cluster holds), the
// supplied objects used, and every object the root substitutes from in
// the cluster, seeded or supplied, or the run stops.
func NewInputsPhase(r *Render, connect func() (*apply.Cluster, error)) *InputsPhase {
	return &InputsPhase{r: r, connect: connect}
}

// InputsPhase is the inputs phase.
type InputsPhase struct {
	r       *Render
	connect func() (*apply.Cluster, error)
}

// Name implements pipeline.Phase.
func (p *InputsPhase) Name() string { return InputsPhaseName }

// Gates implements pipeline.Phase.
func (p *InputsPhase) Gates() []verify.Def {
	return []verify.Def{GateSeed, GateSupplied, GateRootInput, GateSupplyNeeded}
}

// Do implements pipeline.Phase: nothing; the sync writes the inputs
// before the root.
func (p *InputsPhase) Do(context.Context, *pipeline.Run) error { return nil }

// ReadOnly is true (pipeline.ReadOnly): the sync writes the inputs.
func (p *InputsPhase) ReadOnly() bool { return true }

// After implements pipeline.Phase: nothing to prove here (sync proves the
// root reconciled).
func (p *InputsPhase) After(context.Context, *pipeline.Run) []verify.Check { return nil }

// Before implements pipeline.Phase.
func (p *InputsPhase) Before(ctx context.Context, run *pipeline.Run) ([]verify.Check, error) {
	r := p.r
	in := r.Inputs
	if in == nil {
		in = &Inputs{}
		r.Inputs = in
	}
	cl, err := p.connect()
	if err != nil {
		return nil, err
	}
	var out []verify.Check
	if in.pending() {
		c, dec := clusterKey(ctx, cl.Client, r)
		if dec == nil {
			out = append(out, c)
		} else if err := in.build(r.Env, dec); err != nil {
			out = append(out, GateSeed.Each("age-key").Fail(err.Error()))
		}
	}
	out = append(out, in.seedChecks(r)...)
	out = append(out, in.suppliedChecks(r)...)
	out = append(out, rootInputs(ctx, cl.Client, r)...)
	out = append(out, needed(ctx, cl.Client, r)...)
	in.facts(run.Report)
	return out, nil
}

// clusterKey is the age key the cluster holds for the root: its
// decryption.secretRef Secret, as kustomize-controller reads it (nil and
// a failing check when there is none to read).
func clusterKey(ctx context.Context, c client.Client, r *Render) (verify.Check, Decrypter) {
	fail := func(why string) (verify.Check, Decrypter) {
		return GateSeed.Each("age-key").Fail(why + ": the SOPS-encrypted objects to seed or supply cannot be decrypted; give the age key (up --age-key-file FILE or -, $SOPS_AGE_KEY, $SOPS_AGE_KEY_FILE), or --supply them decrypted"), nil
	}
	root := r.Env.Root
	if root == nil || root.Spec.Decryption == nil || root.Spec.Decryption.SecretRef == nil {
		return fail(fmt.Sprintf("no age key was given, and the root %s names no decryption Secret to read one from", r.Options.Namespace+"/"+r.Options.RootName))
	}
	ref := root.Namespace + "/" + root.Spec.Decryption.SecretRef.Name
	var s corev1.Secret
	if err := c.Get(ctx, client.ObjectKey{Namespace: root.Namespace, Name: root.Spec.Decryption.SecretRef.Name}, &s); err != nil {
		return fail(fmt.Sprintf("no age key was given, and the root's decryption Secret %s could not be read (%v)", ref, apierrors.ReasonForError(err)))
	}
	ids, _, err := agekey.SecretIdentities(&s)
	if err != nil {
		return fail(fmt.Sprintf("no age key was given, and the root's decryption Secret %s holds none: %v", ref, err))
	}
	return verify.Check{}, ids
}

func (in *Inputs) seedChecks(r *Render) []verify.Check {
	var out []verify.Check
	for _, s := range in.Seeds {
		if s.Object == nil {
			continue // the age-key check says why
		}
		how := "from " + s.Location.String()
		switch {
		case s.SuppliedFrom != "":
			how = "from " + s.SuppliedFrom + " (supplied in place of " + s.Location.String() + ")"
		case s.Encrypted:
			how += " (SOPS, decrypted in memory with the age key)"
		}
		out = append(out, GateSeed.Each(s.Key()).Pass(fmt.Sprintf("%s %s, keys %s: %s (the root %s substitutes from it and only the root applies it), applied by kustomize-controller's field manager with the root's owner labels",
			s.Key(), how, orNone(s.Keys()), SeedNote, r.Env.Root.Ref())))
	}
	return out
}

func (in *Inputs) suppliedChecks(r *Render) []verify.Check {
	var out []verify.Check
	prereqs := map[string]*fluxrepo.Prerequisite{}
	if r.Env != nil {
		for _, p := range r.Env.Prerequisites() {
			prereqs[p.Key()] = p
		}
	}
	for _, sp := range in.Supplied {
		if sp.Object == nil {
			continue
		}
		c := GateSupplied.Each(sp.Key())
		keys := sp.Keys()
		if p := prereqs[sp.Key()]; p != nil {
			if missing := slices.DeleteFunc(slices.Clone(p.Keys), func(k string) bool { return slices.Contains(keys, k) }); len(missing) > 0 {
				out = append(out, c.Fail(fmt.Sprintf("%s (%s) lacks key(s) %s that Kustomization(s) %s use: strict substitution would fail them; add the key(s)", sp.Key(), sp.From, strings.Join(missing, ", "), strings.Join(p.Readers, ", "))))
				continue
			}
		}
		out = append(out, c.Pass(fmt.Sprintf("%s from %s, keys %s: applied before the root", sp.Key(), sp.From, orNone(keys))))
	}
	return out
}

// rootInputs is inputs.root-substitute-from: each object the root
// substitutes from (not optional) is seeded, supplied or in the cluster.
// Missing, kustomize-controller fails the root's build ("substitute from
// 'Secret/x' error: secrets \"x\" not found") and nothing comes up: the
// run refuses before its first write. A namespace not there yet is
// missing too.
func rootInputs(ctx context.Context, c client.Client, r *Render) []verify.Check {
	root := r.Env.Root
	if root == nil || !root.Substitutes() {
		return nil
	}
	keys := map[string][]string{}
	for _, p := range r.Env.Prerequisites() {
		keys[p.Key()] = p.Keys
	}
	var out []verify.Check
	for _, ref := range root.Spec.PostBuild.SubstituteFrom {
		key := fluxrepo.DataKey(ref.Kind, root.Namespace, ref.Name)
		if ref.Optional || r.Inputs.has(key) || slices.ContainsFunc(out, func(c verify.Check) bool { return c.ID == GateRootInput.Each(key).ID }) {
			continue
		}
		g := GateRootInput.Each(key)
		var obj client.Object = &corev1.ConfigMap{}
		if ref.Kind == "Secret" {
			obj = &corev1.Secret{}
		}
		err := c.Get(ctx, client.ObjectKey{Namespace: root.Namespace, Name: ref.Name}, obj)
		where := r.where("Kustomization", root.Namespace, root.Name)
		switch {
		case err == nil:
			out = append(out, g.Pass(fmt.Sprintf("%s exists in the cluster (the root %s substitutes from it)", key, root.Ref())))
		case apierrors.IsNotFound(err):
			why := "the repository does not hold it"
			switch d := r.Env.Data[key]; {
			case d != nil && d.MadeBy != "":
				why = fmt.Sprintf("%s makes it at runtime, once its controller runs: after the root", d.MadeBy)
			case d != nil:
				why = fmt.Sprintf("%s renders it, not the root alone, so it is not seeded", orCLI(d.AppliedBy))
			}
			out = append(out, g.Fail(fmt.Sprintf("%s %s/%s is not in the cluster, not seeded and not supplied (%s): the root %s (%s) substitutes from it, and kustomize-controller would fail its first reconcile (\"substitute from '%s/%s' error: not found\"), so nothing would come up; pass --supply FILE holding %s %s/%s with key(s) %s; nothing was written",
				ref.Kind, root.Namespace, ref.Name, why, root.Ref(), where, ref.Kind, ref.Name, ref.Kind, root.Namespace, ref.Name, orNone(keys[key]))))
		default:
			out = append(out, g.Skip(fmt.Sprintf("could not read %s: %v", key, err)))
		}
	}
	return out
}

func orCLI(appliedBy string) string {
	if appliedBy == "" {
		return "the root directory"
	}
	return "Kustomization " + appliedBy
}

// needed is inputs.prerequisite: each object Kustomizations other than
// the root substitute from that the repository does not hold, named with
// its keys, readers and where the repository references it; supplied or
// in the cluster it passes, missing it fails (sync.prerequisite would
// refuse the sync: refused before the first write instead).
func needed(ctx context.Context, c client.Client, r *Render) []verify.Check {
	if r.Env == nil {
		return nil
	}
	var out []verify.Check
	// Where the repository's own bootstrap makes one (a resources template
	// from a secret manager, a Taskfile command): named, never run.
	b, _ := bootstrapfiles.Read(r.Env.Repo)
	for _, p := range r.Env.Prerequisites() {
		if r.Inputs.has(p.Key()) || (len(p.Readers) == 1 && r.Env.Root != nil && p.Readers[0] == r.Env.Root.Ref()) {
			continue // supplied (inputs.supplied) or the root's alone (inputs.root-substitute-from)
		}
		g := GateSupplyNeeded.Each(p.Key())
		var refs []string
		for _, rd := range p.Readers {
			ns, name, _ := strings.Cut(rd, "/")
			if k := r.Env.Kustomization(ns, name); k != nil {
				refs = append(refs, fmt.Sprintf("%s (%s)", rd, r.Env.FindLine(k.Files, k.Location.File, p.Name)))
			}
		}
		what := fmt.Sprintf("%s, keys %s, substituted from by %s", p.Key(), orNone(p.Keys), orNone(refs))
		var obj client.Object = &corev1.ConfigMap{}
		if p.Kind == "Secret" {
			obj = &corev1.Secret{}
		}
		switch err := c.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, obj); {
		case err == nil:
			out = append(out, g.Pass(what+": made outside the repository, exists in the cluster"))
		case apierrors.IsNotFound(err):
			// sync.prerequisite would refuse the sync for it: refused here,
			// before the controllers phase writes anything.
			made := "made outside the repository"
			if o := b.Object(p.Key()); o != nil {
				made = fmt.Sprintf("made by the repository's bootstrap (%s at %s), which up does not run", o.How, o.Location)
			}
			out = append(out, g.Fail(what+": "+made+", and not in the cluster: kustomize-controller would fail its readers (\"substitute from '"+p.Kind+"/"+p.Name+"' error: not found\"); nothing was written — pass --supply FILE holding it (a v1 "+p.Kind+", SOPS-encrypted or plain; never printed), or create it first"))
		default:
			out = append(out, g.Skip(fmt.Sprintf("could not read %s: %v", p.Key(), err)))
		}
	}
	return out
}

// facts records the seeds and the supplied objects (names and keys only).
func (in *Inputs) facts(r *verify.Report) {
	var seeds, supplied []string
	for _, s := range in.Seeds {
		seeds = append(seeds, fmt.Sprintf("%s (%s)", s.Key(), s.Location.File))
	}
	for _, sp := range in.Supplied {
		supplied = append(supplied, fmt.Sprintf("%s (%s)", sp.Key(), sp.From))
	}
	if len(seeds) > 0 {
		r.Facts["seeds"] = strings.Join(seeds, ", ")
	}
	if len(supplied) > 0 {
		r.Facts["supplied"] = strings.Join(supplied, ", ")
	}
}

// present is sync.prerequisite's verdict on p when the sync writes it
// before the root (ok false when it does not): a seed is there, a supplied
// object is there with the keys it holds.
func (in *Inputs) present(p *fluxrepo.Prerequisite) (verify.Check, bool) {
	g := GatePrerequisite.Each(p.Key())
	if s := in.Seed(p.Key()); s != nil {
		return g.Pass(fmt.Sprintf("%s is %s (%s)", p.Key(), SeedNote, s.Location)), true
	}
	sp := in.Supply(p.Key())
	if sp == nil || sp.Object == nil {
		return verify.Check{}, false
	}
	keys := sp.Keys()
	if missing := slices.DeleteFunc(slices.Clone(p.Keys), func(k string) bool { return slices.Contains(keys, k) }); len(missing) > 0 {
		return g.Fail(fmt.Sprintf("%s, supplied by %s, lacks key(s) %s that Kustomization(s) %s use and nothing the environment renders defines: strict substitution fails them (variable not set); add the key(s) to it",
			p.Key(), sp.From, strings.Join(missing, ", "), strings.Join(p.Readers, ", "))), true
	}
	return g.Pass(fmt.Sprintf("%s is supplied by %s with the key(s) its readers use (%s; read by %s), applied before the root", p.Key(), sp.From, orNone(p.Keys), strings.Join(p.Readers, ", "))), true
}
