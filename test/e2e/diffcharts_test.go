//go:build e2e

package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/homelab-ops/bootstrap/internal/diff"
)

// chartPrediction is what `diff --charts` says of one object of a
// HelmRelease's chart: how it changes, and the unified diff of its YAML.
type chartPrediction struct {
	change string
	diff   string
}

// chartKey names an object of a chart as "group/Kind/name": Helm installs
// a chart's namespaced objects in the release's namespace, so the
// namespace adds nothing within one release.
func chartKey(group, kind, name string) string { return group + "/" + kind + "/" + name }

// chartPredictions are the objects of HelmRelease ref's chart diff says
// change (nil: diff rendered no chart for it), and its notes.
func chartPredictions(r *diff.Result, ref string) (map[string]chartPrediction, []string) {
	for _, c := range r.Clusters {
		for _, ch := range c.Charts {
			if ch.HelmRelease != ref {
				continue
			}
			out := map[string]chartPrediction{}
			for _, o := range ch.Objects {
				out[chartKey(o.Key.Group, o.Key.Kind, o.Key.Name)] = chartPrediction{change: o.Change, diff: o.Diff}
			}
			return out, ch.Notes
		}
	}
	return nil, nil
}

// manifestObjects are the objects of a Helm release's manifest (what
// helm-controller applied, after its post-renderers), by chartKey, each
// as YAML with sorted keys — the form diff writes its diffs in.
func manifestObjects(manifest string) (map[string]string, error) {
	out := map[string]string{}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("the release's manifest: %w", err)
		}
		if m == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		b, err := yaml.Marshal(m)
		if err != nil {
			return nil, err
		}
		gvk := u.GroupVersionKind()
		out[chartKey(gvk.Group, gvk.Kind, u.GetName())] = string(b)
	}
}

// judgeCharts compares diff's chart predictions with the manifests
// helm-controller stored for the release before and after the upgrade:
// every object whose manifest changed is predicted with the right change,
// nothing predicted is unchanged, and every line the prediction adds
// (removes) is a line of the object helm-controller applied after (before).
// One message per disagreement, sorted.
func judgeCharts(pred map[string]chartPrediction, before, after map[string]string) []string {
	var out []string
	keys := map[string]bool{}
	for k := range before {
		keys[k] = true
	}
	for k := range after {
		keys[k] = true
	}
	for k := range pred {
		keys[k] = true
	}
	for k := range keys {
		b, inB := before[k]
		a, inA := after[k]
		p, predicted := pred[k]
		want := ""
		switch {
		case !inB && inA:
			want = diff.Added
		case inB && !inA:
			want = diff.Removed
		case inB && inA && b != a:
			want = diff.Changed
		}
		switch {
		case want == "" && predicted:
			out = append(out, fmt.Sprintf("%s: diff --charts says %s; helm-controller's manifests before and after hold it unchanged (before %t, after %t)", k, p.change, inB, inA))
			continue
		case want == "":
			continue
		case !predicted:
			out = append(out, fmt.Sprintf("%s: %s by helm-controller's upgrade and diff --charts did not predict it", k, want))
			continue
		case p.change != want:
			out = append(out, fmt.Sprintf("%s: diff --charts says %s; helm-controller's upgrade %s it", k, p.change, want))
			continue
		}
		for _, l := range diffLines(p.diff, '+') {
			if !slices.Contains(strings.Split(a, "\n"), l) {
				out = append(out, fmt.Sprintf("%s: diff --charts adds the line %q; helm-controller applied no such line", k, l))
			}
		}
		for _, l := range diffLines(p.diff, '-') {
			if !slices.Contains(strings.Split(b, "\n"), l) {
				out = append(out, fmt.Sprintf("%s: diff --charts removes the line %q; the release before held no such line", k, l))
			}
		}
	}
	slices.Sort(out)
	return out
}

// diffLines are the lines of a unified diff marked with sign, without the
// mark (the ---/+++ file headers left out).
func diffLines(unified string, sign byte) []string {
	var out []string
	for _, l := range strings.Split(unified, "\n") {
		if len(l) == 0 || l[0] != sign || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "+++") {
			continue
		}
		out = append(out, l[1:])
	}
	return out
}

// hasLine says whether unified marks a line containing s with sign.
func hasLine(unified string, sign byte, s string) bool {
	return slices.ContainsFunc(diffLines(unified, sign), func(l string) bool { return strings.Contains(l, s) })
}

// brokenChartPrediction is pred with its one changed object's added line
// replaced by a value helm-controller never applied.
func brokenChartPrediction(pred map[string]chartPrediction) map[string]chartPrediction {
	out := map[string]chartPrediction{}
	for k, p := range pred {
		if p.change == diff.Changed {
			var b bytes.Buffer
			for _, l := range strings.Split(p.diff, "\n") {
				if strings.HasPrefix(l, "+") && !strings.HasPrefix(l, "+++") {
					l = strings.ReplaceAll(l, "green", "purple")
				}
				b.WriteString(l + "\n")
			}
			p.diff = b.String()
		}
		out[k] = p
	}
	return out
}

// samePredictions says whether a and b predict the same object changes.
func samePredictions(a, b map[string]prediction) bool {
	if len(a) != len(b) {
		return false
	}
	for k, p := range a {
		if q, ok := b[k]; !ok || q != p {
			return false
		}
	}
	return true
}
