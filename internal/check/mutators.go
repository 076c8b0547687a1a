package check

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/homelab-ops/bootstrap/internal/bootstrapfiles"
	"github.com/homelab-ops/bootstrap/internal/fluxobj"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// mutator is an admission webhook or policy that may rewrite Flux
// Kustomizations when the API server admits them (issue 54 item 6): a
// MutatingWebhookConfiguration or MutatingAdmissionPolicy whose rules
// take kustomize.toolkit.fluxcd.io kustomizations, or a Kyverno
// (Cluster)Policy with a mutate rule matching Kustomization. What it
// writes is not in the repository, so a verdict it could reverse (an
// undefined variable it may define) is not judged a failure.
type mutator struct {
	what string // e.g. "Kyverno ClusterPolicy flux-vars"
	loc  string // where the repository or its bootstrap declares it
	// namespaces it is limited to (nil: any), and excluded ones.
	only, except []string
}

// matches says whether m may mutate Kustomization k.
func (m mutator) matches(k *fluxrepo.Kustomization) bool {
	if len(m.only) > 0 && !slices.Contains(m.only, k.Namespace) {
		return false
	}
	return !slices.Contains(m.except, k.Namespace)
}

func (m mutator) String() string { return fmt.Sprintf("%s (%s)", m.what, m.loc) }

// mutatorOf is the mutator object r declares (nil when it is none).
func mutatorOf(m map[string]any, loc string) *mutator {
	kind, _ := m["kind"].(string)
	api, _ := m["apiVersion"].(string)
	group, _, _ := strings.Cut(api, "/")
	name, _, _ := unstructured.NestedString(m, "metadata", "name")
	switch {
	case kind == "MutatingWebhookConfiguration" && group == "admissionregistration.k8s.io":
		hooks, _, _ := unstructured.NestedSlice(m, "webhooks")
		for _, h := range hooks {
			hm, _ := h.(map[string]any)
			rules, _, _ := unstructured.NestedSlice(hm, "rules")
			if slices.ContainsFunc(rules, takesKustomizations) {
				return &mutator{what: "MutatingWebhookConfiguration " + name, loc: loc}
			}
		}
	case kind == "MutatingAdmissionPolicy" && group == "admissionregistration.k8s.io":
		rules, _, _ := unstructured.NestedSlice(m, "spec", "matchConstraints", "resourceRules")
		if slices.ContainsFunc(rules, takesKustomizations) {
			return &mutator{what: "MutatingAdmissionPolicy " + name, loc: loc}
		}
	case (kind == "ClusterPolicy" || kind == "Policy") && group == "kyverno.io":
		return kyvernoMutator(m, kind, name, loc)
	}
	return nil
}

// takesKustomizations says whether an admission rule (apiGroups and
// resources, "*" any) selects Flux Kustomizations.
func takesKustomizations(rule any) bool {
	rm, _ := rule.(map[string]any)
	groups, _, _ := unstructured.NestedStringSlice(rm, "apiGroups")
	res, _, _ := unstructured.NestedStringSlice(rm, "resources")
	return (slices.Contains(groups, "*") || slices.Contains(groups, fluxobj.KustomizeGroup)) &&
		(slices.Contains(res, "*") || slices.Contains(res, "kustomizations"))
}

// kyvernoMutator reads a Kyverno policy's mutate rules matching
// Kustomization (match.resources, or match.any/all[].resources: kinds
// written Kustomization, a group/version/Kustomization, or "*"), and the
// namespaces they are limited to or exclude.
func kyvernoMutator(m map[string]any, kind, name, loc string) *mutator {
	rules, _, _ := unstructured.NestedSlice(m, "spec", "rules")
	for _, r := range rules {
		rm, _ := r.(map[string]any)
		if _, ok := rm["mutate"]; !ok {
			continue
		}
		match, _ := rm["match"].(map[string]any)
		blocks := []any{match}
		for _, f := range []string{"any", "all"} {
			l, _, _ := unstructured.NestedSlice(match, f)
			blocks = append(blocks, l...)
		}
		for _, b := range blocks {
			bm, _ := b.(map[string]any)
			kinds, _, _ := unstructured.NestedStringSlice(bm, "resources", "kinds")
			if !slices.ContainsFunc(kinds, func(k string) bool { return k == "*" || k == "Kustomization" || strings.HasSuffix(k, "/Kustomization") }) {
				continue
			}
			mu := &mutator{what: "Kyverno " + kind + " " + name, loc: loc}
			mu.only, _, _ = unstructured.NestedStringSlice(bm, "resources", "namespaces")
			if ns, _, _ := unstructured.NestedString(m, "metadata", "namespace"); kind == "Policy" && ns != "" {
				mu.only = []string{ns}
			}
			ex, _ := rm["exclude"].(map[string]any)
			exBlocks := []any{ex}
			for _, f := range []string{"any", "all"} {
				l, _, _ := unstructured.NestedSlice(ex, f)
				exBlocks = append(exBlocks, l...)
			}
			for _, e := range exBlocks {
				em, _ := e.(map[string]any)
				ns, _, _ := unstructured.NestedStringSlice(em, "resources", "namespaces")
				mu.except = append(mu.except, ns...)
			}
			return mu
		}
	}
	return nil
}

// mutatorsOf are the mutators the environment applies and the ones the
// repository's bootstrap installs before Flux: objects in the values
// files of its helmfile releases (a raw or policy chart's resources).
func mutatorsOf(env *fluxrepo.Env, b *bootstrapfiles.Bootstrap) []mutator {
	var out []mutator
	add := func(mu *mutator) {
		if mu != nil && !slices.ContainsFunc(out, func(x mutator) bool { return x.what == mu.what }) {
			out = append(out, *mu)
		}
	}
	scan := func(res []*resource.Resource, files []string) {
		for _, r := range res {
			m, err := r.Map()
			if err != nil {
				continue
			}
			ns := r.GetNamespace()
			add(mutatorOf(m, env.Locate(files, r.GetKind(), ns, r.GetName()).String()))
		}
	}
	scan(env.RootResources, env.RootFiles)
	for _, k := range env.Kustomizations {
		if k.Built {
			scan(k.Resources, k.Files)
		}
	}
	if b == nil {
		return out
	}
	for _, rel := range b.Releases {
		for _, v := range rel.Values {
			p := filepath.Join(filepath.Dir(filepath.Join(env.Repo, filepath.FromSlash(rel.Location.File))), filepath.FromSlash(v))
			if !strings.HasPrefix(p, env.Repo+string(filepath.Separator)) {
				continue // outside the repository: not read
			}
			data, err := safeio.ReadFileMax(p, v, 1<<20)
			if err != nil {
				continue // the bootstrap reader notes what it cannot read
			}
			var vals any
			if yaml.Unmarshal(data, &vals) != nil {
				continue
			}
			walkObjects(vals, func(m map[string]any) {
				add(mutatorOf(m, fmt.Sprintf("in the values of %s", rel)))
			})
		}
	}
	return out
}

// walkObjects calls f for every mapping under v that looks like an object
// (apiVersion and kind).
func walkObjects(v any, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["apiVersion"].(string); ok {
			if _, ok := x["kind"].(string); ok {
				f(x)
			}
		}
		for _, c := range x {
			walkObjects(c, f)
		}
	case []any:
		for _, c := range x {
			walkObjects(c, f)
		}
	}
}

// mutating are the mutators that may rewrite k, for a message ("" none).
func mutating(ms []mutator, k *fluxrepo.Kustomization) string {
	var s []string
	for _, m := range ms {
		if m.matches(k) {
			s = append(s, m.String())
		}
	}
	return strings.Join(s, ", ")
}
