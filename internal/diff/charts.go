package diff

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/chartutil"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/homelab-ops/bootstrap/internal/chartrender"
)

// Chart is one HelmRelease's chart rendered at both revisions (--charts):
// the manifests helm-controller applies, compared per object.
type Chart struct {
	// HelmRelease is namespace/name.
	HelmRelease string `json:"helmRelease"`
	// Base and Head say which chart was rendered ("" when the HelmRelease
	// is not at base: a Helm install).
	Base string `json:"base,omitempty"`
	Head string `json:"head,omitempty"`
	// Notes say what could not be fetched or rendered, and how the values
	// were composed.
	Notes   []string  `json:"notes,omitempty"`
	Objects []*Object `json:"objects,omitempty"`
	// compared: both revisions rendered (or head, for an install).
	compared bool
}

// chartDiffs renders the chart of every HelmRelease the diff reports as a
// Helm install or upgrade (its own change, a valuesFrom object's, a chart
// source's) at both revisions. A chart that cannot be fetched or rendered
// is a note on its HelmRelease, never a failure of the diff.
func chartDiffs(ctx context.Context, f *chartrender.Fetcher, c *Cluster, b, h *side, red *redactor) []*Chart {
	hrsH, hrsB := byRef(helmReleases(h.rend)), byRef(helmReleases(b.rend))
	var out []*Chart
	for _, ref := range helmActions(c, hrsH) {
		hr := hrsH[ref]
		ch := &Chart{HelmRelease: ref}
		out = append(out, ch)
		head, desc, notes, err := renderChart(ctx, f, h, hr)
		ch.Head = desc
		ch.Notes = append(ch.Notes, prefixed("head: ", notes)...)
		if err != nil {
			ch.Notes = append(ch.Notes, "head: the chart is not rendered: "+err.Error())
			continue
		}
		var base map[ObjectKey]*unstructured.Unstructured
		if hb := hrsB[ref]; hb != nil {
			var notes []string
			base, ch.Base, notes, err = renderChart(ctx, f, b, hb)
			ch.Notes = append(ch.Notes, prefixed("base: ", notes)...)
			if err != nil {
				ch.Notes = append(ch.Notes, "base: the chart is not rendered, nothing compared: "+err.Error())
				continue
			}
		}
		ch.Objects, ch.compared = compareObjects(base, head, true, red), true
		for _, o := range ch.Objects {
			if o.Change == Removed {
				// Helm's upgrade deletes what the new manifest no longer
				// has, unless annotated helm.sh/resource-policy: keep
				// (helm v4 pkg/action/upgrade.go, resource_policy.go).
				o.Pruned = field(base[o.Key], "metadata", "annotations", "helm.sh/resource-policy") != "keep"
				o.Action = "deleted by the Helm upgrade"
				if !o.Pruned {
					o.Action = "left on the cluster: helm.sh/resource-policy: keep"
				}
			}
		}
	}
	return out
}

func byRef(hrs []*helmv2.HelmRelease) map[string]*helmv2.HelmRelease {
	out := map[string]*helmv2.HelmRelease{}
	for _, hr := range hrs {
		out[hr.Namespace+"/"+hr.Name] = hr
	}
	return out
}

// helmActions are the HelmReleases (at head) the diff says are installed
// or upgraded: a HelmRelease object added or changed with a Helm action,
// or one named by another object's action (a valuesFrom ConfigMap or
// Secret, a chart source: helmEffects), sorted.
func helmActions(c *Cluster, hrs map[string]*helmv2.HelmRelease) []string {
	set := map[string]bool{}
	for _, k := range c.Kustomizations {
		for _, o := range k.Objects {
			ref := o.Key.Namespace + "/" + o.Key.Name
			if o.Key.Group == helmGroup && o.Key.Kind == "HelmRelease" {
				if hrs[ref] != nil && (strings.HasPrefix(o.Action, "Helm install") || strings.HasPrefix(o.Action, "Helm upgrade")) {
					set[ref] = true
				}
				continue
			}
			for r := range hrs {
				if strings.Contains(o.Action, "HelmRelease "+r+" ") || strings.Contains(o.Action, "HelmRelease "+r+"'s ") {
					set[r] = true
				}
			}
		}
	}
	out := slices.Collect(maps.Keys(set))
	sort.Strings(out)
	return out
}

// renderChart fetches and renders hr's chart at side s: its objects keyed
// as the diff keys them, what was rendered, and notes.
func renderChart(ctx context.Context, f *chartrender.Fetcher, s *side, hr *helmv2.HelmRelease) (map[ObjectKey]*unstructured.Unstructured, string, []string, error) {
	idx := s.index()
	src, err := chartrender.SourceOf(hr, func(group, kind, ns, name string) *unstructured.Unstructured {
		return idx[ObjectKey{Group: group, Kind: kind, Namespace: ns, Name: name}]
	})
	if err != nil {
		return nil, "", nil, err
	}
	fetched, err := f.Fetch(ctx, src)
	if err != nil {
		return nil, "", nil, err
	}
	desc := fmt.Sprintf("%s %s from %s", fetched.Chart.Metadata.Name, fetched.Version, src)
	vals, notes := chartValues(ctx, idx, hr)
	r, err := chartrender.Render(ctx, hr, fetched.Chart, vals)
	if err != nil {
		return nil, desc, notes, err
	}
	objs := map[ObjectKey]*unstructured.Unstructured{}
	for _, u := range r.Objects {
		objs[keyOf(u)] = u
	}
	return objs, desc + " for Kubernetes " + r.KubeVersion, notes, nil
}

// index is every object side s renders (after substitution), by key.
func (s *side) index() map[ObjectKey]*unstructured.Unstructured {
	out := map[ObjectKey]*unstructured.Unstructured{}
	for _, r := range s.rend {
		maps.Copy(out, r.objs)
	}
	return out
}

// chartValues composes hr's values as helm-controller v1.6.4 does
// (internal/controller/helmrelease_controller.go: fluxcd/pkg/chartutil
// v1.27.2 ChartValuesFromReferences: each valuesFrom in order, merged, then
// spec.values over them), reading the ConfigMaps and Secrets the
// repository renders at this revision. A reference the repository does
// not render, or a SOPS-encrypted Secret, cannot be read offline: the
// chart is rendered without it, and a note says so.
func chartValues(ctx context.Context, idx map[ObjectKey]*unstructured.Unstructured, hr *helmv2.HelmRelease) (map[string]any, []string) {
	var notes []string
	cl := &objectClient{objs: map[ObjectKey]client.Object{}}
	refs := make([]meta.ValuesReference, 0, len(hr.Spec.ValuesFrom))
	for _, v := range hr.Spec.ValuesFrom {
		u := idx[ObjectKey{Kind: v.Kind, Namespace: hr.Namespace, Name: v.Name}]
		switch {
		case u == nil && !v.Optional:
			notes = append(notes, fmt.Sprintf("valuesFrom %s %s/%s is not rendered by the repository: rendered without it", v.Kind, hr.Namespace, v.Name))
			continue
		case u != nil && u.Object["sops"] != nil:
			notes = append(notes, fmt.Sprintf("valuesFrom %s %s/%s is SOPS-encrypted: rendered without it", v.Kind, hr.Namespace, v.Name))
			continue
		}
		if u != nil {
			obj, err := served(u)
			if err != nil {
				notes = append(notes, fmt.Sprintf("valuesFrom %s %s/%s does not decode: rendered without it", v.Kind, hr.Namespace, v.Name))
				continue
			}
			cl.objs[ObjectKey{Kind: v.Kind, Namespace: hr.Namespace, Name: v.Name}] = obj
		}
		refs = append(refs, v)
	}
	vals, err := chartutil.ChartValuesFromReferences(ctx, logr.Discard(), cl, hr.Namespace, hr.GetValues(), refs...)
	if err != nil {
		notes = append(notes, "values: "+err.Error()+": rendered with spec.values only")
		return hr.GetValues(), notes
	}
	return vals, notes
}

// writeCharts writes each rendered chart's diff (--charts).
func writeCharts(b *strings.Builder, c *Cluster) {
	for _, ch := range c.Charts {
		from := ch.Base
		if from == "" {
			from = "nothing (Helm install)"
		}
		to := ch.Head
		if to == "" {
			to = "not rendered"
		}
		fmt.Fprintf(b, "\n=== %s: chart of HelmRelease %s: %s → %s\n", c.Path, ch.HelmRelease, from, to)
		for _, n := range ch.Notes {
			fmt.Fprintf(b, "  note: %s\n", n)
		}
		if ch.compared && len(ch.Objects) == 0 {
			b.WriteString("  the rendered manifests do not change\n")
		}
		for _, o := range ch.Objects {
			fmt.Fprintf(b, "* %s %s: %s\n", o.Key, o.Change, o.Action)
			b.WriteString(o.Diff)
		}
	}
}
