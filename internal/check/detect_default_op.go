package check

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/envsubst/parse"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// detDefaultOp is the [default-op] row of the table of detectors.
var detDefaultOp = detector{ID: DefaultOp, Gate: Substitution, Advisory: true,
	Short:   "default-operator expansion on an undefined name: a dead shell check in a script, a message rendered as a value, or (advisory) a template default",
	Rule:    "fluxcd/pkg/envsubst v1.7.1 parse (:-, :=, :?, :+ on an unset variable): the default renders, strict mode or not",
	Emitted: "substitution.defaultOp, on each expression of substitution.object's scan (subst.go)",
}

// defaultOp is the [default-op] finding of the default-operator form n of
// r (isDefaultOp) whose variable the Kustomization leaves unset (or, for
// the colon forms, empty): its default renders.
func (s *substitution) defaultOp(r *resource.Resource, n *parse.FuncNode) []finding {
	o, env, k, from := s.o, s.env, s.k, s.from
	if !o.on(DefaultOp) || s.takesValue(n) {
		// The Kustomization defines it: the default never renders (the
		// seed's own L0 gate: no default-operator form on an *undefined*
		// name). A shared component's default each app overrides.
		return nil
	}
	expr := "${" + n.Param + n.Name
	var f finding
	switch {
	case unread(r, expr) != "":
		// Its default (or message) renders into text no program reads (a
		// commented-out line of an embedded file, a CRD's description):
		// harmless.
		return nil
	case s.inScript(r, expr):
		// A script something runs later: the author meant the shell's
		// variable, and envsubst replaces it now (the seed's dead OIDC
		// guard: if [ -z "${X:-}" ] became if [ -z "" ]).
		f = finding{Finding: verify.Finding{Detector: DefaultOp,
			Cause:   expr + "…} in a script: replaced with its default before the shell runs",
			Message: fmt.Sprintf("%s…} in a script of %s: %s is not defined in this environment (%s), so post-build substitution replaces it with its default before the shell ever runs; the script's own check of %s is dead", expr, s.objName(r), n.Param, from, n.Param),
			Fix:     fmt.Sprintf("escape it as $%s…} so the shell sees it", expr)}, name: n.Param, search: expr}
	case n.Name == ":?":
		f = finding{Finding: verify.Finding{Detector: DefaultOp,
			Cause:   expr + "…} renders its message as the value where " + n.Param + " is not defined",
			Message: fmt.Sprintf("%s…} in %s: %s is not defined in this environment (%s), and envsubst renders the message as the value: a non-empty wrong value, not an error", expr, s.objName(r), n.Param, from),
			Fix:     fmt.Sprintf("define %s in %s (strict mode fails ${%s} when it is missing)", n.Param, from, n.Param)}, name: n.Param, search: expr}
	default:
		// A template default in a plain field value: an advisory naming
		// what renders.
		loc := locate(env, k, r, expr)
		// Said once per place of writing (a component's defaults are
		// taken by every Kustomization using it): the variables, their
		// defaults, how many Kustomizations take them.
		f = at(loc, verify.Finding{Detector: DefaultOp, Verdict: verify.Warn,
			Cause: "template defaults written in " + writtenIn(env, loc.File), Item: fmt.Sprintf("%s…} renders %s", expr, s.defaultText(n)),
			CauseFix: "nothing if the defaults are meant; else define the variable in the postBuild (substitute or substituteFrom) of the Kustomizations named",
			Message:  fmt.Sprintf("%s…} in %s: %s is not defined for Kustomization %s (%s), so its default %s renders here", expr, s.objName(r), n.Param, k.Ref(), from, s.defaultText(n)),
			Fix:      fmt.Sprintf("nothing if the default is meant; else define %s in %s", n.Param, from)})
		f.name, f.search = n.Param, expr
		return []finding{f}
	}
	return []finding{located(env, k, r, f)}
}

// takesValue says whether an operator form takes the variable's value
// rather than its default or message: the name is defined, and for the
// colon forms (which treat empty as unset) non-empty.
func (s *substitution) takesValue(n *parse.FuncNode) bool {
	v, ok := s.vars[n.Param]
	if !ok {
		return false
	}
	return !strings.HasPrefix(n.Name, ":") || v != ""
}

// isDefaultOp mirrors the controller's list of operators that tolerate an
// unset variable (fluxcd/pkg/envsubst).
func isDefaultOp(name string) bool {
	switch name {
	case "-", "+", "=", "?", ":-", ":+", ":=", ":?":
		return true
	}
	return false
}

// inScript says whether text occurs in a script of r: a multi-line string
// under a container's command or args, any string under a script key, or a
// ConfigMap/Secret value that is a script (#! or a .sh key).
func (s *substitution) inScript(r *resource.Resource, text string) bool {
	m, err := r.Map()
	if err != nil {
		return false
	}
	found := false
	eachString(m, nil, func(v string, keys []string) {
		if found || !strings.Contains(v, text) || allCommented(v, text) {
			return
		}
		last := ""
		if len(keys) > 0 {
			last = keys[len(keys)-1]
		}
		switch {
		case (slices.Contains(keys, "command") || slices.Contains(keys, "args")) && strings.Contains(v, "\n"):
			found = true
		case last == "script" || strings.HasSuffix(last, "Script"):
			found = true
		case (r.GetKind() == "ConfigMap" || r.GetKind() == "Secret") && len(keys) == 2 && (strings.HasPrefix(v, "#!") || strings.HasSuffix(last, ".sh")):
			found = true
		}
	})
	return found
}

// allCommented says every occurrence of text in the multi-line string v
// is on a line whose first non-space character is #.
func allCommented(v, text string) bool {
	offs := unescaped(v, text)
	if len(offs) == 0 || !strings.Contains(v, "\n") {
		return false
	}
	for _, off := range offs {
		start := strings.LastIndexByte(v[:off], '\n') + 1
		if !strings.HasPrefix(strings.TrimLeft(v[start:off], " \t"), "#") {
			return false
		}
	}
	return true
}

// defaultText is what the controller renders for operator form n of an
// unset variable, quoted: fluxcd/pkg/envsubst v1.7.1 (kustomize-controller
// v1.9.5's) evaluates the arguments first — a nested ${B} with the
// Kustomization's own variables — and, for every default operator
// (lookupFunc: toDefault, ":+" and "+" included), renders the variable's
// value when it is non-empty, else the arguments joined. With strict
// substitution an undefined nested ${B} fails instead (said so).
func (s *substitution) defaultText(n *parse.FuncNode) string {
	text, ok := exprText(n)
	if !ok {
		return fallbackDefaultText(n)
	}
	strict := s.o.strict.on
	out, err := envsubst.Eval(text, func(k string) (string, bool) {
		v, ok := s.vars[k]
		if strict {
			return v, ok
		}
		return v, true // kustomize's varSubstitution: every name set, fail open
	})
	if err != nil {
		return fmt.Sprintf("nothing: the controller's envsubst fails on it (%v)", err)
	}
	var unreadable []string
	walk(&parse.ListNode{Nodes: n.Args}, func(f *parse.FuncNode) {
		if fluxrepo.Placeholder(s.vars[f.Param]) {
			unreadable = append(unreadable, "${"+f.Param+"}")
		}
	})
	q := fmt.Sprintf("%q", out)
	if len(unreadable) > 0 {
		q += fmt.Sprintf(" (with %s as the cluster holds it, not readable here)", strings.Join(unreadable, ", "))
	}
	return q
}

// exprText writes n back as envsubst's parser reads it (false for a form
// it cannot write faithfully).
func exprText(n *parse.FuncNode) (string, bool) {
	if isLength(n) {
		return opening(n) + "}", true
	}
	var b strings.Builder
	b.WriteString(opening(n))
	sep := ""
	switch n.Name {
	case ":":
		sep = ":"
	case "/", "//", "/#", "/%":
		sep = "/"
	}
	for i, a := range n.Args {
		if i > 0 {
			b.WriteString(sep)
		}
		switch a := a.(type) {
		case *parse.TextNode:
			if strings.Contains(a.Value, "$") || strings.Contains(a.Value, "}") {
				return "", false
			}
			b.WriteString(a.Value)
		case *parse.FuncNode:
			t, ok := exprText(a)
			if !ok {
				return "", false
			}
			b.WriteString(t)
		default:
			return "", false
		}
	}
	if sep == "/" && len(n.Args) == 1 {
		// ${A/pattern/} replaces with nothing: the parser keeps no
		// argument for the empty replacement, and ${A/pattern} does not
		// parse (found by FuzzSubstExpressions: "${0/0/}").
		b.WriteString("/")
	}
	b.WriteString("}")
	return b.String(), true
}

// fallbackDefaultText is the literal text of n's arguments, quoted.
func fallbackDefaultText(n *parse.FuncNode) string {
	var b strings.Builder
	for _, a := range n.Args {
		if t, ok := a.(*parse.TextNode); ok {
			b.WriteString(t.Value)
		}
	}
	return fmt.Sprintf("%q", b.String())
}

// writtenIn names the directory of file for the template-default advisory:
// a kustomize Component's directory is said to be one.
func writtenIn(env *fluxrepo.Env, file string) string {
	if file == "" {
		return "(file unknown)"
	}
	dir := path.Dir(file)
	for _, name := range []string{"kustomization.yaml", "kustomization.yml"} {
		for _, l := range env.FileLines(path.Join(dir, name)) {
			if strings.TrimSpace(l) == "kind: Component" {
				return dir + " (a kustomize Component)"
			}
		}
	}
	return dir
}
