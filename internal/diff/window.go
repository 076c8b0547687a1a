package diff

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/internal/fluxgraph"
	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// Window is one step between the commits: Reader substitutes from Object,
// whose changed knobs Applier applies, and nothing makes Reader wait for
// Applier (no same-source dependsOn path: fluxgraph.GatedPath, as
// check.race judges it). If Reader reconciles first, it renders the new
// revision with Object as it was at base: what it applies then is Steps
// (or Fail, when that render fails: strict substitution).
type Window struct {
	Reader  string `json:"reader"`
	Applier string `json:"applier"`
	// Object is the substituteFrom object, Kind/namespace/name.
	Object string   `json:"object"`
	Knobs  []string `json:"knobs"`
	// Strict is the head release's substitution mode.
	Strict bool   `json:"strict"`
	Fail   string `json:"fail,omitempty"`
	// Steps are one line per object the transitional render changes,
	// "HelmRelease kube-system/cilium renders `k8sServiceHost: ""` (fail
	// open on this release) → Helm upgrade"; Objects their diffs against
	// base (what the cluster runs before the window).
	Steps   []string  `json:"steps,omitempty"`
	Objects []*Object `json:"objects,omitempty"`
}

// When is the window's condition, "if <reader> reconciles before <applier>".
func (w *Window) When() string {
	if w.Reader == w.Applier {
		return fmt.Sprintf("when %s reconciles, it substitutes before it applies %s itself", w.Reader, w.Object)
	}
	return fmt.Sprintf("if %s reconciles before %s", w.Reader, w.Applier)
}

// changedKnobs are the keys of d (head) added or changed since db (base;
// nil: the object is new). A SOPS-encrypted value cannot be compared.
func changedKnobs(db, d *fluxrepo.Data) []string {
	var out []string
	for k, v := range d.Values {
		if d.Encrypted {
			continue
		}
		if db == nil {
			out = append(out, k)
			continue
		}
		if bv, ok := db.Values[k]; !ok || bv != v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// windows finds every window of the change in one cluster: for each
// substituteFrom object rendered at head whose knobs the change adds or
// changes, each Kustomization reading it that does not wait for its
// applier is rendered at head with the object as at base.
func windows(ctx context.Context, b, h *side, red *redactor) ([]*Window, error) {
	g := fluxgraph.FromEnv(h.env)
	var out []*Window
	for _, key := range slices.Sorted(maps.Keys(h.env.Data)) {
		d := h.env.Data[key]
		if d.AppliedBy == "" {
			continue // applied by nothing the graph knows (the root directory alone)
		}
		knobs := changedKnobs(b.env.Data[key], d)
		if len(knobs) == 0 {
			continue
		}
		applier, ok := fluxgraph.ParseID(d.AppliedBy)
		if !ok {
			continue
		}
		// The data the reader sees if it reconciles first: the object as at base.
		data := maps.Clone(h.env.Data)
		if bd := b.env.Data[key]; bd != nil {
			data[key] = bd
		} else {
			delete(data, key)
		}
		for _, k := range h.env.Kustomizations {
			if !k.Built || k.Err != nil || !reads(k, key) {
				continue
			}
			reader := fluxgraph.ID(k.Kustomization, h.env.Options.Namespace)
			if reader != applier && g.GatedPath(reader, applier) != nil {
				continue // it waits for the applier's revision
			}
			if appliedTogether(b, k, d, key) {
				continue
			}
			if same, err := rendersAsAtBase(ctx, b, h, k, data); err != nil {
				return nil, err
			} else if same && !noWindowShortcut {
				windowShortcuts.Add(1)
				continue
			}
			w, err := window(ctx, b, h, k, data, d, key, knobs, red)
			if err != nil {
				return nil, err
			}
			if w != nil {
				out = append(out, w)
			}
		}
	}
	return out, nil
}

// noWindowShortcut renders every window (tests: the shortcut changes no
// window); windowShortcuts counts the windows not rendered.
var (
	noWindowShortcut bool
	windowShortcuts  atomic.Int64
)

// rendersAsAtBase says the window's render of k (head's objects over
// data) is base's render of it, which builds: k builds the same objects
// in the same order at both revisions (sameBuild), the
// substitution runs in the same mode, and every substituteFrom object k
// reads is in data as it was at base (present alike, the same keys and
// values) — the inputs of render are then base's, and window would find
// every object rendered as at base. So a knob change alone (every object
// of k unchanged, only the data it reads) is not rendered a third time.
func rendersAsAtBase(ctx context.Context, b, h *side, k *fluxrepo.Kustomization, data map[string]*fluxrepo.Data) (bool, error) {
	bk := b.env.Kustomization(k.Namespace, k.Name)
	if b.sub.strict != h.sub.strict || !sameBuild(bk, k) {
		return false, nil
	}
	for _, ref := range k.Spec.PostBuild.SubstituteFrom {
		key := fluxrepo.DataKey(ref.Kind, k.Namespace, ref.Name)
		hd, bd := h.env.Data[key], b.env.Data[key]
		// What it reads, and how render softens the reference (by the
		// environment's data: absent or open), as at base.
		if !sameData(data[key], bd) || (hd == nil) != (bd == nil) || hd != nil && hd.Open != bd.Open {
			return false, nil
		}
	}
	br, err := b.renderOf(ctx, bk)
	if err != nil {
		return false, err
	}
	return br.fail == "", nil
}

// appliedTogether says k comes to read the object key only in this change
// (new, or a new substituteFrom entry), and the Kustomization applying
// the object d also applies k: kustomize-controller's apply (fluxcd/pkg/ssa
// v0.76.2 ResourceManager.ApplyAll, manager_apply.go) sorts the set in
// ReconcileOrder (sort.go: ConfigMap and Secret among the first kinds,
// custom resources after every kind it names) and applies the objects one
// after the other in that order, so k's spec that reads the object lands
// after the object: no reconcile of k reads it missing.
func appliedTogether(b *side, k *fluxrepo.Kustomization, d *fluxrepo.Data, key string) bool {
	if k.AppliedBy == "" || k.AppliedBy != d.AppliedBy || (d.Kind != "ConfigMap" && d.Kind != "Secret") {
		return false
	}
	bk := b.env.Kustomization(k.Namespace, k.Name)
	return bk == nil || !reads(bk, key)
}

// reads says k substitutes from the object key.
func reads(k *fluxrepo.Kustomization, key string) bool {
	if !k.Substitutes() {
		return false
	}
	for _, ref := range k.Spec.PostBuild.SubstituteFrom {
		if fluxrepo.DataKey(ref.Kind, k.Namespace, ref.Name) == key {
			return true
		}
	}
	return false
}

// window renders k at head with data (the object as at base); nil when
// that render is the head's (the knobs do not reach k's objects).
func window(ctx context.Context, b, h *side, k *fluxrepo.Kustomization, data map[string]*fluxrepo.Data, d *fluxrepo.Data, key string, knobs []string, red *redactor) (*Window, error) {
	tr, err := render(ctx, h.env, data, k, h.sub, h.rd)
	if err != nil {
		return nil, err
	}
	hr, err := h.renderOf(ctx, k)
	if err != nil {
		return nil, err
	}
	if hr.fail != "" {
		return nil, nil // it fails at head anyway: its FAIL says so
	}
	w := &Window{Reader: k.Ref(), Applier: d.AppliedBy, Object: key, Knobs: knobs, Strict: h.sub.strict}
	if tr.fail != "" {
		w.Fail = tr.fail
		why := ""
		if strings.Contains(tr.fail, "(strict mode)") {
			why = " (strict)"
		}
		w.Steps = []string{fmt.Sprintf("%s: Kustomization %s fails to build%s: %s; it applies nothing until %s has applied %s", w.When(), k.Ref(), why, tr.fail, d.AppliedBy, key)}
		return w, nil
	}
	var br *rendered
	if bk := b.env.Kustomization(k.Namespace, k.Name); bk != nil {
		if br, err = b.renderOf(ctx, bk); err != nil {
			return nil, err
		}
	}
	keys := map[ObjectKey]bool{}
	for ok := range tr.objs {
		keys[ok] = true
	}
	mode := "fail open on this release"
	if h.sub.strict {
		mode = "strict on this release, yet it renders" // a default-operator form, an optional knob
	}
	for _, ok := range sortedKeys(keys) {
		t, hd := tr.objs[ok], hr.objs[ok]
		if hd != nil && equality.Semantic.DeepEqual(t.Object, hd.Object) {
			continue // the knobs do not reach it
		}
		var before map[ObjectKey]*unstructured.Unstructured
		if br != nil && br.objs[ok] != nil {
			before = map[ObjectKey]*unstructured.Unstructured{ok: br.objs[ok]}
		}
		objs := compareObjects(before, map[ObjectKey]*unstructured.Unstructured{ok: t}, false, red)
		if len(objs) == 0 {
			continue // rendered as at base: nothing happens in the window
		}
		o := objs[0]
		w.Objects = append(w.Objects, o)
		w.Steps = append(w.Steps, fmt.Sprintf("%s: %s renders %s (%s) → %s", w.When(), ok, renders(red.yamlOf(t), red.yamlOf(hd)), mode, o.Action))
	}
	if len(w.Steps) == 0 {
		return nil, nil
	}
	return w, nil
}

// renders is what the transitional render t says that head's hd does not:
// its lines not in hd, trimmed, in backquotes (at most three, then "…").
func renders(t, hd string) string {
	have := map[string]bool{}
	for _, l := range strings.Split(hd, "\n") {
		have[l] = true
	}
	var lines []string
	for _, l := range strings.Split(t, "\n") {
		if !have[l] && strings.TrimSpace(l) != "" {
			lines = append(lines, "`"+strings.TrimSpace(l)+"`")
		}
	}
	if len(lines) > 3 {
		lines = append(lines[:3], "…")
	}
	if len(lines) == 0 {
		return "differently"
	}
	return strings.Join(lines, ", ")
}
