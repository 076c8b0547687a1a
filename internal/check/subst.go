package check

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"path"
	goruntime "runtime"
	"slices"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/envsubst/parse"
	fluxkustomize "github.com/fluxcd/pkg/kustomize"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/crdschema"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// dataRef is one substituteFrom reference, resolved in the environment.
type dataRef struct {
	key      string // fluxrepo.DataKey
	optional bool
	by       *fluxrepo.Kustomization
	// unread: by's path was not built, so the names it uses are unknown.
	unread bool
}

// usage is what the substitution pass learned for the knob checks: which
// substituteFrom objects each Kustomization reads, and which names it uses.
type usage struct {
	refs []dataRef
	// names used in ${…} by Kustomization ref.
	names map[string]map[string]bool
	// assumed: the names, by Kustomization ref, that no rendered object
	// defines and its prerequisites must.
	assumed map[string]map[string]bool
}

// checkSubstitution is one check.substitution/<ns>/<name> per Kustomization.
func checkSubstitution(ch *checker, ctx context.Context, o Options, env *fluxrepo.Env, sv *crdschema.Validator) ([]verify.Check, usage) {
	u := usage{names: map[string]map[string]bool{}, assumed: map[string]map[string]bool{}}
	// One Kustomization's pass reads the environment and writes only its
	// own findings: the passes run side by side (one per core), each with
	// a checker of its own, and are gathered in the environment's order —
	// the report, and the order findings are recorded in, as one by one.
	type pass struct {
		c              verify.Check
		ch             *checker
		names, assumed map[string]bool
		refs           []dataRef
		substituted    bool
	}
	passes := make([]pass, len(env.Kustomizations))
	var knobs map[string]string
	var g errgroup.Group
	g.SetLimit(goruntime.GOMAXPROCS(0))
	for i, k := range env.Kustomizations {
		def := Substitution.Each(k.Ref())
		p := &passes[i]
		if !k.Built {
			why := k.Note
			if k.Err != nil {
				why = "its path does not build (" + Render.ID + ")"
			}
			c := def.Skip(fmt.Sprintf("Kustomization %s (%s) was not checked: %s", k.Ref(), k.Location, why))
			// Without postBuild nothing is substituted, so no substitution
			// hazard can hide there: the skip is reported, not blocking. A
			// substituting one that could not be read leaves the run
			// incomplete.
			// A Kustomization reading an ExternalArtifact (an
			// ArtifactGenerator's output, usually over this very
			// repository) is part of the environment the check could not
			// read: never an optional skip.
			c.Optional = !k.Substitutes() && fluxobj.KustomizationSource(k.Kustomization).Kind != sourcev1.ExternalArtifactKind
			p.c = c
			if k.Substitutes() {
				for _, ref := range k.Spec.PostBuild.SubstituteFrom {
					p.refs = append(p.refs, dataRef{key: fluxrepo.DataKey(ref.Kind, k.Namespace, ref.Name), optional: true, by: k, unread: true})
				}
			}
			continue
		}
		p.ch = &checker{policy: ch.policy, env: ch.env}
		if !k.Substitutes() {
			if knobs == nil {
				knobs = envKnobs(env, o.Policy)
			}
			g.Go(func() error {
				p.c = literalCheck(p.ch, ctx, o, env, k, def, sv, knobs)
				return nil
			})
			continue
		}
		p.substituted = true
		g.Go(func() error {
			p.c, p.names, p.refs, p.assumed = substituteOne(p.ch, ctx, o, env, k, def, sv)
			return nil
		})
	}
	_ = g.Wait() // the passes return no error
	var out []verify.Check
	for i, k := range env.Kustomizations {
		p := &passes[i]
		out = append(out, p.c)
		if p.ch != nil {
			ch.findings = append(ch.findings, p.ch.findings...)
		}
		if p.substituted {
			u.names[k.Ref()], u.assumed[k.Ref()] = p.names, p.assumed
		}
		u.refs = append(u.refs, p.refs...)
	}
	if len(out) == 0 {
		out = append(out, Substitution.Pass("no Kustomization to check"))
	}
	return out, u
}

// envKnobs are the variables the environment's Kustomizations substitute,
// each with where it is defined: the keys of their spec.postBuild.substitute
// and of the substituteFrom objects the environment renders (or the policy
// declares with keys).
func envKnobs(env *fluxrepo.Env, p *Policy) map[string]string {
	out := map[string]string{}
	for _, k := range env.Kustomizations {
		if !k.Substitutes() {
			continue
		}
		for _, ref := range k.Spec.PostBuild.SubstituteFrom {
			key := fluxrepo.DataKey(ref.Kind, k.Namespace, ref.Name)
			d := env.Data[key]
			if d == nil {
				d = p.prerequisite(key)
			}
			if d == nil {
				continue
			}
			for name := range d.Values {
				if _, ok := out[name]; !ok {
					out[name] = fmt.Sprintf("%s, substituted by Kustomization %s", key, k.Ref())
				}
			}
		}
		for name := range k.Spec.PostBuild.Substitute {
			if _, ok := out[name]; !ok {
				out[name] = fmt.Sprintf("spec.postBuild.substitute of Kustomization %s", k.Ref())
			}
		}
	}
	return out
}

// literalCheck: a Kustomization without postBuild ships ${…} literally
// (knobLiterals), and its Flux objects as built.
func literalCheck(ch *checker, ctx context.Context, o Options, env *fluxrepo.Env, k *fluxrepo.Kustomization, def verify.Def, sv *crdschema.Validator, knobs map[string]string) verify.Check {
	var fs []finding
	for _, r := range k.Resources {
		fs = append(fs, labelsCheck(o, env, k, r)...)
		fs = append(fs, schemaCheck(ctx, sv, o, env, k, r, r, false)...)
	}
	for _, r := range k.Resources {
		fs = append(fs, knobLiterals(o, env, k, r, knobs)...)
	}
	return ch.about(k, def, fs, fmt.Sprintf("Kustomization %s does not substitute and ships no ${…} (%d objects)", k.Ref(), len(k.Resources)))
}

// substitution is one Kustomization's substitution pass: what the
// controller would substitute, and what the pass over its objects found.
type substitution struct {
	o      Options
	env    *fluxrepo.Env
	k      *fluxrepo.Kustomization
	vars   map[string]string
	from   string // where vars come from, for the messages
	always bool
	uobj   map[string]any // the Kustomization, for the controller's code
	cl     fluxrepo.DataClient

	names map[string]bool
	// assumed are names no rendered object defines that a prerequisite
	// (a substituteFrom object made outside the environment) or an open
	// maker (ExternalSecret dataFrom) may define: not findings here; the
	// prerequisite is reported with them (check.knobs).
	assumed map[string]bool
	// unknown are the sources that may define a name the repository does
	// not show.
	unknown        []string
	fs             []finding
	controllerErrs map[string]bool
	substituted    int
	encrypted      []string
	// schema validates the Flux objects as applied (nil: not at all).
	schema *crdschema.Validator
	// plain is how the controller's code ends on an object without "$".
	plain plainState
	// shared: this pass's call of the controller's code is the one the
	// environment makes (Env.Substituted: not strict, every substituteFrom
	// object rendered, no value assumed), so its answers are taken.
	shared bool
}

// plainState is what SubstituteVariables does with an object whose YAML
// holds no "$" (fluxcd/pkg/kustomize v1.35.6 kustomize_varsub.go): it
// loads the Kustomization's variables (LoadVariables), checks their names,
// and runs envsubst over the text, which leaves a text without "$" as it
// is; then it reads the text back (YAMLToJSON, UnmarshalJSON). Only the
// first two can fail, and they are the same for every object of one
// Kustomization. So once one such object went through without an error,
// another one would too, its values unchanged: the check skips the call
// for it where nothing reads the object as substituted (typeChange needs a
// ${…}, schemaCheck a Flux object). After an error every object still
// goes through the call, each error named.
type plainState int

const (
	plainUnknown plainState = iota
	plainOK
	plainFails
)

// substituteOne runs the controller's substitution (strict or not, as the
// release's kustomize-controller runs it: Options.strict) on every object
// of k and classifies what it finds with the controller's parser.
func substituteOne(ch *checker, ctx context.Context, o Options, env *fluxrepo.Env, k *fluxrepo.Kustomization, def verify.Def, sv *crdschema.Validator) (verify.Check, map[string]bool, []dataRef, map[string]bool) {
	names := map[string]bool{}
	kc, vars, from, refs, unknown := substituteVars(env, o.Policy, k)
	always := kc.GetSubstituteStrategy() == kustomizev1.SubstituteStrategyAlways
	assumed := map[string]bool{}
	if len(unknown) > 0 {
		// What the unknown sources must define: every plain ${NAME} no
		// rendered object defines. The controller's code sees them defined
		// (the placeholder), as it will once the prerequisite exists.
		for n := range k.Names() {
			if _, ok := vars[n]; !ok {
				assumed[n] = true
			}
		}
		if kc.Spec.PostBuild.Substitute == nil {
			kc.Spec.PostBuild.Substitute = map[string]string{}
		}
		for n := range assumed {
			kc.Spec.PostBuild.Substitute[n] = fluxrepo.PrerequisiteValue
			vars[n] = fluxrepo.PrerequisiteValue
		}
	}
	uobj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kc)
	if err != nil {
		return def.Fail(fmt.Sprintf("Kustomization %s: %v", k.Ref(), err)), names, refs, nil
	}
	s := &substitution{o: o, env: env, k: k, vars: vars, from: from, always: always, uobj: uobj, cl: fluxrepo.DataClient{Env: env, Extra: o.Policy.prerequisite},
		names: names, assumed: assumed, unknown: unknown, controllerErrs: map[string]bool{}, schema: sv,
		shared: !o.strict.on && len(unknown) == 0 && rendersData(env, k)}
	for _, r := range k.Resources {
		s.fs = append(s.fs, labelsCheck(o, env, k, r)...)
		if fluxrepo.SubstitutionDisabled(r) {
			s.fs = append(s.fs, schemaCheck(ctx, sv, o, env, k, r, r, false)...)
			continue
		}
		s.object(ctx, r)
	}
	s.fs = append(s.fs, s.unexplained()...)
	ev := []string{fmt.Sprintf("substitutes from %s; %d variable(s) defined; %d object(s) substituted, %s (%s)", from, len(vars), s.substituted, o.strict.mode(), o.strict.why)}
	if len(assumed) > 0 {
		ev = append(ev, fmt.Sprintf("defined by none of the rendered objects, so left to %s: %s", strings.Join(unknown, ", "), strings.Join(slices.Sorted(maps.Keys(assumed)), ", ")))
	}
	if len(s.encrypted) > 0 {
		ev = append(ev, fmt.Sprintf("SOPS-encrypted, substituted by the controller after decryption, values not checked: %s", strings.Join(s.encrypted, ", ")))
	}
	if len(s.controllerErrs) > 0 {
		ev = append(ev, "kustomize-controller (fluxcd/pkg/kustomize.SubstituteVariables, "+o.strict.mode()+"): "+slices.Sorted(maps.Keys(s.controllerErrs))[0])
	}
	return ch.about(k, def, s.fs, fmt.Sprintf("Kustomization %s substitutes cleanly (%s, %d objects)", k.Ref(), o.strict.mode(), s.substituted), ev...), names, refs, assumed
}

// substituteVars is what the controller would load for k: substituteFrom in
// order, then the inline substitute (which wins). It returns a copy of k in
// which a substituteFrom object the environment does not render is optional
// (check.knobs reports it as a prerequisite; substitution goes on without
// it), the variables, where they come from ("nothing" when nowhere), every
// reference, and the sources whose keys the repository does not show (a
// required object made elsewhere, a maker with open keys).
func substituteVars(env *fluxrepo.Env, p *Policy, k *fluxrepo.Kustomization) (*kustomizev1.Kustomization, map[string]string, string, []dataRef, []string) {
	var unknown []string
	var refs []dataRef
	vars := map[string]string{}
	var sources []string
	kc := k.DeepCopy()
	for i, ref := range kc.Spec.PostBuild.SubstituteFrom {
		key := fluxrepo.DataKey(ref.Kind, k.Namespace, ref.Name)
		refs = append(refs, dataRef{key: key, optional: ref.Optional, by: k})
		d := env.Data[key]
		if d == nil {
			d = p.prerequisite(key) // declared in the policy, with its keys
		}
		if d == nil {
			// Reported by check.knobs; substitution goes on without it.
			if !ref.Optional {
				unknown = append(unknown, key+" (a prerequisite: not rendered by the environment)")
			}
			kc.Spec.PostBuild.SubstituteFrom[i].Optional = true
			continue
		}
		sources = append(sources, fmt.Sprintf("%s (%s)", key, d.Describe()))
		if d.Open {
			unknown = append(unknown, key+" ("+d.MadeBy+" adds keys with dataFrom or templateFrom)")
		}
		maps.Copy(vars, d.Values)
	}
	for key, v := range kc.Spec.PostBuild.Substitute {
		vars[key] = v
	}
	if len(kc.Spec.PostBuild.Substitute) > 0 {
		sources = append(sources, fmt.Sprintf("spec.postBuild.substitute of %s (%s)", k.Ref(), k.Location))
	}
	from := strings.Join(sources, ", ")
	if from == "" {
		from = "nothing"
	}
	return kc, vars, from, refs, unknown
}

func (s *substitution) defined(n string) bool { _, ok := s.vars[n]; return ok }

// object checks one object of the Kustomization: with the parser first,
// then with the controller's own code. It is the one scan of the object:
// the detectors of check.substitution each take what they read from it
// (its text, each expression, the substituted object).
func (s *substitution) object(ctx context.Context, r *resource.Resource) {
	o, env, k := s.o, s.env, s.k
	if r.Field("sops") != nil {
		s.encrypted = append(s.encrypted, s.objName(r))
	}
	if s.plain == plainOK && (len(s.vars) > 0 || s.always) && !schemaReads(s.schema, o, r) && !fluxrepo.WritesDollar(r) {
		// Below: its YAML holds no "$", so no expression to find, and the
		// controller's code leaves it as it is (see plainState).
		s.substituted++
		return
	}
	y, err := r.AsYAML()
	if err != nil {
		// The controller's own code reads the object the same way
		// (SubstituteVariables: res.AsYAML) and fails the build with it.
		if _, cerr := s.controller(ctx, r); cerr != nil {
			s.controllerErrs[fmt.Sprintf("post build failed for '%s': %v", s.objName(r), cerr)] = true
		}
		return
	}
	text := string(y)
	tree, perr := parse.Parse(text)
	if len(s.vars) == 0 && !s.always {
		// The controller does not substitute at all: literals ship.
		s.fs = append(s.fs, schemaCheck(ctx, s.schema, o, env, k, r, r, false)...)
		s.fs = append(s.fs, s.literals(r, text)...)
		return
	}
	s.substituted++
	nodes, bad := funcNodes(text, tree, perr)
	s.fs = append(s.fs, s.parseErrors(r, bad)...)
	for _, n := range nodes {
		s.expression(r, n)
	}
	if s.plain == plainOK && !strings.Contains(text, "$") && !schemaReads(s.schema, o, r) {
		// Nothing to substitute, and nothing reads the object as
		// substituted (see plainState).
		return
	}
	// The controller's own code, in the release's mode, against the
	// environment's data.
	out, err := s.controller(ctx, r)
	if err != nil {
		s.controllerErrs[fmt.Sprintf("post build failed for '%s': %v", s.objName(r), err)] = true
		if !strings.Contains(text, "$") {
			s.plain = plainFails
		}
		return
	}
	if s.plain == plainUnknown && !strings.Contains(text, "$") {
		s.plain = plainOK
	}
	s.fs = append(s.fs, s.typeChange(r, out, nodes)...)
	if !s.placeholders(nodes) {
		s.fs = append(s.fs, schemaCheck(ctx, s.schema, o, env, k, r, out, len(nodes) > 0)...)
	}
}

// controller is kustomize-controller's substitution of r
// (fluxcd/pkg/kustomize.SubstituteVariables) in the release's mode over
// the environment's data: the environment's answer when it made the same
// call (shared), which the load already made for the objects it ingests.
func (s *substitution) controller(ctx context.Context, r *resource.Resource) (*resource.Resource, error) {
	if s.shared {
		return s.env.Substituted(s.k, r)
	}
	return fluxkustomize.SubstituteVariables(ctx, s.cl, unstructured.Unstructured{Object: s.uobj}, r.DeepCopy(),
		fluxkustomize.SubstituteWithStrict(s.o.strict.on), fluxkustomize.SubstituteWithAlways(s.always))
}

// rendersData says whether the environment renders every substituteFrom
// object of k: then the data the check reads is the environment's alone
// (no policy prerequisite) and whether a reference is optional changes
// nothing (LoadVariables skips only an object it cannot find).
func rendersData(env *fluxrepo.Env, k *fluxrepo.Kustomization) bool {
	for _, ref := range k.Spec.PostBuild.SubstituteFrom {
		if env.Data[fluxrepo.DataKey(ref.Kind, k.Namespace, ref.Name)] == nil {
			return false
		}
	}
	return true
}

// expression hands one ${…} of object r to its detector, in the one scan
// of the object: a default-operator form to [default-op], any other to
// [undefined].
func (s *substitution) expression(r *resource.Resource, n *parse.FuncNode) {
	s.names[n.Param] = true
	if isDefaultOp(n.Name) {
		s.fs = append(s.fs, s.defaultOp(r, n)...)
		return
	}
	s.fs = append(s.fs, s.undefined(r, n)...)
}

// placeholders says whether a variable of nodes takes a value the check
// cannot read (encrypted, made at runtime, a prerequisite): the object as
// applied is not known, so it is not judged.
func (s *substitution) placeholders(nodes []*parse.FuncNode) bool {
	for _, n := range nodes {
		if fluxrepo.Placeholder(s.vars[n.Param]) {
			return true
		}
	}
	return false
}

// isLength says whether n is ${#A}, A's length: the parser's FuncNode
// named "#" with no argument (fluxcd/pkg/envsubst parse.parseLenFunc; a
// ${A#pattern} has its pattern as an argument, and ${A#} does not parse).
func isLength(n *parse.FuncNode) bool { return n.Name == "#" && len(n.Args) == 0 }

// opening is n as written up to its arguments: "${A:-" for ${A:-b}, and
// "${#A" for the length, whose operator comes before the name (found by
// FuzzSubstExpressions: "${A#}" was written for ${#A}).
func opening(n *parse.FuncNode) string {
	if isLength(n) {
		return "${#" + n.Param
	}
	return "${" + n.Param + n.Name
}

// eachString calls f with every string value under v and the map keys
// leading to it (list indexes left out).
func eachString(v any, keys []string, f func(s string, keys []string)) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			eachString(c, append(keys, k), f)
		}
	case []any:
		for _, c := range v {
			eachString(c, keys, f)
		}
	case string:
		f(v, keys)
	}
}

func walk(n parse.Node, f func(*parse.FuncNode)) {
	switch n := n.(type) {
	case *parse.ListNode:
		for _, c := range n.Nodes {
			walk(c, f)
		}
	case *parse.FuncNode:
		f(n)
		for _, a := range n.Args {
			walk(a, f)
		}
	}
}

// funcNodes lists the expansions of text the parser accepts and those it
// rejects. The controller parses the whole object at once and fails on the
// first rejection; to name every one, a text that does not parse is taken
// line by line.
func funcNodes(text string, tree *parse.Tree, perr error) ([]*parse.FuncNode, []rejection) {
	var nodes []*parse.FuncNode
	collect := func(n *parse.FuncNode) { nodes = append(nodes, n) }
	if perr == nil {
		walk(tree.Root, collect)
		return nodes, nil
	}
	for _, line := range strings.Split(text, "\n") {
		if t, err := parse.Parse(line); err == nil {
			walk(t.Root, collect)
		}
	}
	return nodes, rejected(text)
}

// expr is one expansion: how to show it, the text that finds its line,
// and its variable ("" for an expression the parser rejects).
type expr struct{ show, search, name string }

func exprOf(n *parse.FuncNode) expr {
	search := opening(n)
	if isLength(n) {
		return expr{show: search + "}", search: search + "}", name: n.Param}
	}
	if n.Name == "" && len(n.Args) == 0 {
		return expr{show: search + "}", search: search + "}", name: n.Param}
	}
	return expr{show: search + "…}", search: search, name: n.Param}
}

// expressions lists the expansions the parser sees in text (each once),
// and those it rejects.
func expressions(text string) []expr {
	var out []expr
	seen := map[string]bool{}
	add := func(e expr) {
		if !seen[e.show] {
			seen[e.show] = true
			out = append(out, e)
		}
	}
	tree, err := parse.Parse(text)
	nodes, bad := funcNodes(text, tree, err)
	for _, b := range bad {
		add(expr{show: b.text, search: b.text})
	}
	for _, n := range nodes {
		add(exprOf(n))
	}
	return out
}

type rejection struct {
	text string
	err  error
}

// rejected finds the expressions the parser rejects: line by line, then
// each unescaped "${" of a failing line up to its "}".
func rejected(text string) []rejection {
	var out []rejection
	for _, line := range strings.Split(text, "\n") {
		if _, err := parse.Parse(line); err == nil {
			continue
		}
		found := false
		for i := 0; i+1 < len(line); i++ {
			if line[i] == '$' && line[i+1] == '$' {
				i++ // an escaped dollar
				continue
			}
			if line[i] != '$' || line[i+1] != '{' {
				continue
			}
			end := strings.IndexByte(line[i:], '}')
			expr := line[i:]
			if end >= 0 {
				expr = line[i : i+end+1]
			}
			if _, err := parse.Parse(expr); err != nil {
				out = append(out, rejection{text: expr, err: err})
				found = true
			}
		}
		if !found {
			_, err := parse.Parse(line)
			out = append(out, rejection{text: strings.TrimSpace(line), err: err})
		}
	}
	if len(out) == 0 {
		_, err := parse.Parse(text)
		if err == nil {
			err = errors.New("rejected")
		}
		out = append(out, rejection{text: "(an expression spanning lines)", err: err})
	}
	return out
}

// objName is r's name as the controller will apply it: a name with
// ${…} is substituted with the Kustomization's variables (a component's
// ${APP}-db), the raw name kept when that fails.
func (s *substitution) objName(r *resource.Resource) string {
	n := objName(r)
	if !strings.Contains(n, "${") {
		return n
	}
	out, err := envsubst.Eval(n, func(k string) (string, bool) { v, ok := s.vars[k]; return v, ok })
	if err != nil {
		return n
	}
	return out
}

func objName(r *resource.Resource) string {
	if ns := r.GetNamespace(); ns != "" {
		return r.GetKind() + "/" + ns + "/" + r.GetName()
	}
	return r.GetKind() + "/" + r.GetName()
}

// located is f, a draft about its search text in r, located there
// (locate): a failure unless it says Warn.
func located(env *fluxrepo.Env, k *fluxrepo.Kustomization, r *resource.Resource, f finding) finding {
	out := at(locate(env, k, r, f.search), f.Finding)
	out.name, out.search = f.name, f.search
	return out
}

// locate is the file and line of text in the files k's build read: the
// source file of a generated ConfigMap or Secret (a configMapGenerator's
// files, envs or literals), else the YAML node of the object declaring r
// that holds it (exprLines), else the first line holding it, preferring
// the file declaring r.
func locate(env *fluxrepo.Env, k *fluxrepo.Kustomization, r *resource.Resource, text string) fluxrepo.Location {
	files := k.Files
	if l := generatorSource(env, k, r, text); l.File != "" {
		return l
	}
	decl := env.Locate(files, r.GetKind(), r.GetNamespace(), r.GetName())
	// The key or value of r's own document writing text: its node's line.
	if ls := exprLines(env, decl, text, true); len(ls) > 0 {
		return fluxrepo.Location{File: decl.File, Line: ls[0]}
	}
	// Not in a scalar there: a patch wrote it, or text is no scalar's (a
	// schema finding's "field:"): the first line holding it.
	if l := env.FindInObject(files, decl, text); l.File != "" {
		return l
	}
	if decl.File != "" {
		return decl
	}
	return k.Location
}

// generatorSource is where text of a ConfigMap or Secret's data is written
// when a kustomize generator made it: kustomize keys a files: source by
// its file name (or the key given as key=path), and an envs: or literals:
// source by the variable, written KEY=value. No such source: no location.
func generatorSource(env *fluxrepo.Env, k *fluxrepo.Kustomization, r *resource.Resource, text string) fluxrepo.Location {
	if r.GetKind() != "ConfigMap" && r.GetKind() != "Secret" {
		return fluxrepo.Location{}
	}
	obj, err := r.Map()
	if err != nil {
		return fluxrepo.Location{}
	}
	var keys []string
	for _, field := range []string{"data", "stringData", "binaryData"} {
		m, _ := obj[field].(map[string]any)
		for key, raw := range m {
			v, _ := raw.(string)
			if (field == "data" && r.GetKind() == "Secret") || field == "binaryData" {
				if b, err := base64.StdEncoding.DecodeString(v); err == nil {
					v = string(b)
				}
			}
			if strings.Contains(v, text) {
				keys = append(keys, key)
			}
		}
	}
	slices.Sort(keys)
	for _, key := range keys {
		// files: the source file named like the key.
		for _, f := range k.Files {
			if path.Base(f) == key {
				if l := env.FindLine([]string{f}, "", text); l.File != "" {
					return l
				}
			}
		}
		// envs: and literals: KEY=value, on the line of the variable.
		for _, f := range k.Files {
			for i, line := range env.FileLines(f) {
				t := strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "-"))
				t = strings.Trim(t, `"'`)
				if strings.HasPrefix(t, key+"=") && strings.Contains(line, text) {
					return fluxrepo.Location{File: f, Line: i + 1}
				}
			}
		}
	}
	return fluxrepo.Location{}
}
