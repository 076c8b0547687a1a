package diff

import (
	"fmt"
	"slices"
	"strings"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/pmezard/go-difflib/difflib"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The changes an object or a Kustomization undergoes.
const (
	Added     = "added"
	Removed   = "removed"
	Changed   = "changed"
	Unchanged = "unchanged"
)

// Object is one object whose rendered form differs between the revisions.
type Object struct {
	Key    ObjectKey `json:"key"`
	Change string    `json:"change"`
	// Action is what the controllers will do about it, in one line.
	Action string `json:"action"`
	// Pruned (a removed object): kustomize-controller deletes it from the
	// cluster.
	Pruned bool `json:"pruned,omitempty"`
	// Diff is the unified diff of the object's YAML (sorted keys, secret
	// values redacted); for an added or removed object, the whole object.
	Diff string `json:"diff,omitempty"`
	// Values: a HelmRelease's composed values, when they change (values.go).
	Values *Values `json:"values,omitempty"`
}

// pruneDisabled says whether the object opts out of garbage collection:
// the label or annotation kustomize.toolkit.fluxcd.io/prune: disabled.
// kustomize-controller v1.9.x (kustomization_controller.go prune) deletes
// stale objects with fluxcd/pkg/ssa DeleteAll, Exclusions
// {kustomize.toolkit.fluxcd.io/prune: disabled}; ssa (manager_delete.go
// Delete) skips an object with utils.AnyInMetadata, labels or annotations.
func pruneDisabled(u *unstructured.Unstructured) bool {
	key := kustomizev1.GroupVersion.Group + "/prune"
	return u.GetLabels()[key] == kustomizev1.DisabledValue || u.GetAnnotations()[key] == kustomizev1.DisabledValue
}

// compareObjects is every object added, removed or changed between base
// and head (either may be nil: a Kustomization added or removed). prune is
// spec.prune of the Kustomization that garbage-collects the removed ones.
func compareObjects(base, head map[ObjectKey]*unstructured.Unstructured, prune bool, red *redactor) []*Object {
	keys := map[ObjectKey]bool{}
	for k := range base {
		keys[k] = true
	}
	for k := range head {
		keys[k] = true
	}
	var out []*Object
	for _, k := range sortedKeys(keys) {
		b, h := base[k], head[k]
		switch {
		case b == nil:
			out = append(out, &Object{Key: k, Change: Added, Action: addAction(h), Diff: unified(k, "", red.yamlOf(h))})
		case h == nil:
			o := &Object{Key: k, Change: Removed, Pruned: prune && !pruneDisabled(b), Diff: unified(k, red.yamlOf(b), "")}
			o.Action = removeAction(b, o.Pruned, prune)
			out = append(out, o)
		case !equality.Semantic.DeepEqual(b.Object, h.Object):
			out = append(out, &Object{Key: k, Change: Changed, Action: changeAction(b, h), Diff: unified(k, red.yamlOf(b), red.yamlOf(h))})
		}
	}
	return out
}

func sortedKeys(m map[ObjectKey]bool) []ObjectKey {
	out := make([]ObjectKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b ObjectKey) int {
		return strings.Compare(a.Group+"\x00"+a.Kind+"\x00"+a.Namespace+"\x00"+a.Name, b.Group+"\x00"+b.Kind+"\x00"+b.Namespace+"\x00"+b.Name)
	})
	return out
}

// unified is the unified diff of a and b (3 lines of context).
func unified(k ObjectKey, a, b string) string {
	s, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(a), B: lines(b),
		FromFile: "base/" + k.String(), ToFile: "head/" + k.String(), Context: 3,
	})
	if err != nil {
		return fmt.Sprintf("# no diff: %v\n", err)
	}
	return s
}

// lines splits s keeping the newlines; none for "" (an object absent).
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return difflib.SplitLines(strings.TrimSuffix(s, "\n"))
}

const (
	helmGroup = "helm.toolkit.fluxcd.io"
	crdKind   = "CustomResourceDefinition"
)

func isKind(u *unstructured.Unstructured, group string, kinds ...string) bool {
	gvk := u.GroupVersionKind()
	return gvk.Group == group && slices.Contains(kinds, gvk.Kind)
}

func field(u *unstructured.Unstructured, path ...string) any {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	return v
}

func addAction(h *unstructured.Unstructured) string {
	switch {
	case isKind(h, helmGroup, "HelmRelease"):
		return "Helm install" + chartOf(h)
	case isKind(h, "apiextensions.k8s.io", crdKind):
		return "CRD created: the API server serves " + crdNames(h)
	}
	return "created"
}

func removeAction(b *unstructured.Unstructured, pruned, prune bool) string {
	if !pruned {
		if prune {
			return "left on the cluster: kustomize.toolkit.fluxcd.io/prune: disabled"
		}
		return "left on the cluster: the Kustomization does not prune (spec.prune: false)"
	}
	switch {
	case isKind(b, "", "Namespace"):
		return "pruned: deleting the Namespace deletes everything in it"
	case isKind(b, "apiextensions.k8s.io", crdKind):
		return "pruned: deleting the CRD deletes every " + crdNames(b) + " object on the cluster"
	case isKind(b, helmGroup, "HelmRelease"):
		// helm-controller's finalizer uninstalls the release.
		return "pruned: Helm uninstall"
	case isKind(b, kustomizev1.GroupVersion.Group, kustomizev1.KustomizationKind):
		// kustomize-controller v1.9.x (kustomization_controller.go
		// finalize): a deleted Kustomization garbage-collects its
		// inventory when its spec.prune is true.
		if p, _ := field(b, "spec", "prune").(bool); p {
			return "pruned: deleting it garbage-collects everything it applied (its spec.prune: true)"
		}
		return "pruned: deleting it leaves what it applied on the cluster (its spec.prune: false)"
	}
	return "pruned: deleted from the cluster"
}

// changeAction says what the controllers do about a changed object.
func changeAction(b, h *unstructured.Unstructured) string {
	switch {
	case isKind(h, helmGroup, "HelmRelease"):
		// helm-controller v1.x upgrades when the chart (its version, from
		// spec.chart or spec.chartRef's source), the values (spec.values,
		// spec.valuesFrom) or the post-renderers change.
		var why []string
		if !equality.Semantic.DeepEqual(field(b, "spec", "chart"), field(h, "spec", "chart")) ||
			!equality.Semantic.DeepEqual(field(b, "spec", "chartRef"), field(h, "spec", "chartRef")) {
			bv, hv := field(b, "spec", "chart", "spec", "version"), field(h, "spec", "chart", "spec", "version")
			if bv != nil && hv != nil && bv != hv {
				why = append(why, fmt.Sprintf("chart %v → %v", bv, hv))
			} else {
				why = append(why, "chart")
			}
		}
		if !equality.Semantic.DeepEqual(field(b, "spec", "values"), field(h, "spec", "values")) {
			why = append(why, "values")
		}
		if !equality.Semantic.DeepEqual(field(b, "spec", "valuesFrom"), field(h, "spec", "valuesFrom")) {
			why = append(why, "valuesFrom")
		}
		if !equality.Semantic.DeepEqual(field(b, "spec", "postRenderers"), field(h, "spec", "postRenderers")) {
			why = append(why, "postRenderers")
		}
		if len(why) > 0 {
			return "Helm upgrade (" + strings.Join(why, ", ") + ")"
		}
		return "HelmRelease updated: chart and values unchanged, no Helm upgrade from them"
	case isKind(h, "apps", "Deployment", "StatefulSet", "DaemonSet"):
		if !equality.Semantic.DeepEqual(field(b, "spec", "template"), field(h, "spec", "template")) {
			return "rollout: the pod template changes"
		}
		return "updated: the pod template is unchanged, no rollout"
	case isKind(h, "apiextensions.k8s.io", crdKind):
		return "CRD changed: every " + crdNames(h) + " object is served and validated by the new definition"
	case isKind(h, sourcev1.GroupVersion.Group, sourcev1.OCIRepositoryKind):
		// A chart bump through an OCIRepository is its spec.ref: named on
		// the line, as a HelmRepository chart's version is.
		if ch := refChange(b, h); ch != "" {
			return "updated (" + ch + ")"
		}
	}
	return "updated"
}

// refChange says how an OCIRepository's spec.ref changes: "tag 1.0.0 →
// 1.1.0" (or semver, digest); "" when it does not.
func refChange(b, h *unstructured.Unstructured) string {
	var out []string
	for _, f := range []string{"tag", "semver", "digest"} {
		bv, _ := field(b, "spec", "ref", f).(string)
		hv, _ := field(h, "spec", "ref", f).(string)
		switch {
		case bv == hv:
		case bv == "":
			out = append(out, fmt.Sprintf("%s %s", f, hv))
		case hv == "":
			out = append(out, fmt.Sprintf("%s %s removed", f, bv))
		default:
			out = append(out, fmt.Sprintf("%s %s → %s", f, bv, hv))
		}
	}
	return strings.Join(out, ", ")
}

func chartOf(u *unstructured.Unstructured) string {
	name, _ := field(u, "spec", "chart", "spec", "chart").(string)
	ver, _ := field(u, "spec", "chart", "spec", "version").(string)
	switch {
	case name != "" && ver != "":
		return fmt.Sprintf(" (chart %s %s)", name, ver)
	case name != "":
		return fmt.Sprintf(" (chart %s)", name)
	}
	return ""
}

func crdNames(u *unstructured.Unstructured) string {
	kind, _ := field(u, "spec", "names", "kind").(string)
	if kind == "" {
		return u.GetName()
	}
	return kind
}
