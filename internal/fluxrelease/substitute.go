package fluxrelease

import (
	"fmt"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/envsubst/parse"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// applier is who applies an object a declaration is read from, so who
// substitutes its fields: kustomize-controller runs post-build
// substitution on every object a Kustomization builds, before applying it
// (kustomize-controller v1.9.x kustomization_controller.go build →
// fluxcd/pkg/kustomize SubstituteVariables).
type applier struct {
	env *fluxrepo.Env
	// k is the Kustomization whose build holds the object; nil: none of
	// the environment (the root directory applied as written).
	k *fluxrepo.Kustomization
	// outside: a file read as written that something outside the
	// environment's Kustomizations applies (the FluxInstance declaring the
	// root, its chart values): what substitutes it is not known.
	outside bool
	// raw is the object as built, sub as k applies it (Env.Applied).
	raw, sub *resource.Resource
}

// newApplier substitutes r as k applies it (fluxrepo.Env.Applied runs the
// controller's own SubstituteVariables over the environment's data).
func newApplier(env *fluxrepo.Env, k *fluxrepo.Kustomization, r *resource.Resource) applier {
	a := applier{env: env, k: k, raw: r, sub: r}
	if k != nil {
		a.sub = env.Applied(k, r)
	}
	return a
}

// settle sets d's value to a field as the cluster gets it: sub, the
// field after the applier's substitution, of raw as written. A value
// still holding a variable, or one a variable left empty, is unresolved,
// with why.
func (a applier) settle(d *declaration, raw, sub string) {
	d.value = sub
	if !strings.Contains(raw, "${") {
		return
	}
	if raw != sub && a.k != nil {
		d.written, d.substitutedBy = raw, a.k.Ref()
		how, secret, unknown := a.provenance(raw)
		d.how, d.secret = how, secret
		switch {
		case unknown != "":
			d.value, d.written, d.substitutedBy, d.unresolved = raw, "", "", unknown
		case sub == "":
			// Not strict: an undefined variable renders empty
			// (fluxcd/pkg/envsubst); strict: the Kustomization fails.
			d.value, d.written, d.substitutedBy, d.unresolved = raw, "", "", fmt.Sprintf("it renders empty after Kustomization %s's post-build substitution (%s): the controller applies an empty value, or fails the Kustomization where StrictPostBuildSubstitutions is on", a.k.Ref(), how)
		}
		return
	}
	d.unresolved, d.literal = a.asWritten(), !a.outside
}

// asWritten says why a value holding ${…} reaches the cluster as written,
// in the controller's terms.
func (a applier) asWritten() string {
	switch {
	case a.outside:
		return "it holds a variable, and the file is applied outside the repository's Kustomizations: what substitutes it is not known offline"
	case a.k == nil:
		return "it holds a variable and no Kustomization of the environment applies it with post-build substitution: the cluster gets it as written"
	case !a.k.Substitutes():
		return fmt.Sprintf("it holds a variable and Kustomization %s, which applies it, has no spec.postBuild: the controller applies it as written", a.k.Ref())
	case fluxrepo.SubstitutionDisabled(a.raw):
		return fmt.Sprintf("it holds a variable and the object opts out of Kustomization %s's substitution (kustomize.toolkit.fluxcd.io/substitute: disabled): the controller applies it as written", a.k.Ref())
	case len(a.vars()) == 0 && a.k.GetSubstituteStrategy() != kustomizev1.SubstituteStrategyAlways:
		// fluxcd/pkg/kustomize SubstituteVariables: "if len(vars) > 0
		// || options.Always" — no variable, no substitution, defaults
		// included.
		return fmt.Sprintf("it holds a variable and Kustomization %s's post-build substitution defines no variable, so the controller does not run it (fluxcd/pkg/kustomize SubstituteVariables runs only with variables, or with substituteStrategy: Always) and applies it as written", a.k.Ref())
	}
	return fmt.Sprintf("it holds a variable Kustomization %s's post-build substitution leaves as written", a.k.Ref())
}

// source is where a Kustomization's substitution takes a variable from.
type source struct {
	what string // "spec.postBuild.substitute", "ConfigMap ns/name (file:line)"
	data *fluxrepo.Data
}

// vars are the variables k substitutes and where each comes from, as
// fluxcd/pkg/kustomize LoadVariables and SubstituteVariables merge them:
// substituteFrom in order (a later object's key wins), then
// spec.postBuild.substitute over them. An object the environment does not
// render defines nothing here (the check reports it).
func (a applier) vars() map[string]source {
	out := map[string]source{}
	pb := a.k.Spec.PostBuild
	if pb == nil {
		return out
	}
	for _, ref := range pb.SubstituteFrom {
		d := a.env.Data[fluxrepo.DataKey(ref.Kind, a.k.Namespace, ref.Name)]
		if d == nil {
			continue
		}
		what := fmt.Sprintf("%s %s/%s", d.Kind, d.Namespace, d.Name)
		if d.Location.File != "" {
			what += " (" + d.Location.String() + ")"
		}
		for key := range d.Values {
			out[key] = source{what: what, data: d}
		}
	}
	for key := range pb.Substitute {
		out[key] = source{what: "its spec.postBuild.substitute"}
	}
	return out
}

// provenance says where the variables of raw come from for the applier's
// Kustomization; secret: one is a Secret's (its value is not shown);
// unknown: why the value is not known offline ("" when it is).
func (a applier) provenance(raw string) (how string, secret bool, unknown string) {
	tree, err := parse.Parse(raw)
	if err != nil {
		return "", false, ""
	}
	vars := a.vars()
	var parts []string
	seen := map[string]bool{}
	var walk func(n parse.Node)
	walk = func(n parse.Node) {
		switch n := n.(type) {
		case *parse.ListNode:
			for _, c := range n.Nodes {
				walk(c)
			}
		case *parse.FuncNode:
			if !seen[n.Param] {
				seen[n.Param] = true
				src, ok := vars[n.Param]
				switch {
				case ok && src.data != nil && src.data.Encrypted:
					secret = true
					unknown = fmt.Sprintf("%s comes from the SOPS-encrypted %s: its value is not known offline", n.Param, src.what)
				case ok && src.data != nil && src.data.Kind == "Secret":
					secret = true
					parts = append(parts, fmt.Sprintf("%s from %s (a Secret: its value is not shown)", n.Param, src.what))
				case ok:
					parts = append(parts, fmt.Sprintf("%s from %s", n.Param, src.what))
				case n.Name == "=" || n.Name == ":=" || n.Name == "-" || n.Name == ":-":
					parts = append(parts, fmt.Sprintf("%s is not defined: its default%s", n.Param, a.absent()))
				default:
					if d := a.opener(n.Param); d != nil {
						unknown = fmt.Sprintf("%s may come from %s %s/%s, made by %s: its value is not known offline", n.Param, d.Kind, d.Namespace, d.Name, d.MadeBy)
					}
					parts = append(parts, fmt.Sprintf("%s is not defined%s", n.Param, a.absent()))
				}
			}
			for _, c := range n.Args {
				walk(c)
			}
		}
	}
	walk(tree.Root)
	return strings.Join(parts, "; "), secret, unknown
}

// opener is a substituteFrom object whose maker may add keys the
// repository does not show (an ExternalSecret's dataFrom) and that may
// define key; nil: none.
func (a applier) opener(key string) *fluxrepo.Data {
	if a.k.Spec.PostBuild == nil {
		return nil
	}
	for _, ref := range a.k.Spec.PostBuild.SubstituteFrom {
		if d := a.env.Data[fluxrepo.DataKey(ref.Kind, a.k.Namespace, ref.Name)]; d != nil && d.Open && d.Defines(key) {
			return d
		}
	}
	return nil
}

// absent names the substituteFrom objects the environment does not render
// (made out of band, they may define what the repository does not show).
func (a applier) absent() string {
	if a.k.Spec.PostBuild == nil {
		return ""
	}
	var out []string
	for _, ref := range a.k.Spec.PostBuild.SubstituteFrom {
		if a.env.Data[fluxrepo.DataKey(ref.Kind, a.k.Namespace, ref.Name)] == nil {
			out = append(out, fmt.Sprintf("%s %s/%s", ref.Kind, a.k.Namespace, ref.Name))
		}
	}
	if len(out) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s, which it substitutes from, is not in the repository and may define it)", strings.Join(out, ", "))
}
