package fluxrepo

import (
	"slices"
	"strings"
	"testing"

	kustypes "sigs.k8s.io/kustomize/api/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
	"sigs.k8s.io/yaml"
)

// TestDropKeepsFileValid: leaving entries out of a kustomization file (a
// hole) never makes the file invalid, whatever comments surround them
// (issue 55 item 3: `files: # TODO …` with only remote URLs became "did not
// find expected key"). What is left is exactly what was there less the
// entries dropped.
func TestDropKeepsFileValid(t *testing.T) {
	tests := []struct {
		name, text string
		drop       []string // entry values to leave out
		want       map[string][]string
	}{
		{"generator files with a comment on the key", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nconfigMapGenerator:\n  - name: dashboards\n    files: # TODO: vendor them\n      - https://example.invalid/a.json\n      - https://example.invalid/b.json\n",
			[]string{"https://example.invalid/a.json", "https://example.invalid/b.json"}, map[string][]string{"configMapGenerator[dashboards].files": nil}},
		{"one of two generator files, comments on entries", "configMapGenerator:\n  - name: d\n    files: # remote and local\n      - https://example.invalid/a.json # upstream\n      - local.json # ours\n",
			[]string{"https://example.invalid/a.json"}, map[string][]string{"configMapGenerator[d].files": {"local.json"}}},
		{"resources, a comment on the key", "resources: # all of them\n  - https://example.invalid/crds.yaml\n",
			[]string{"https://example.invalid/crds.yaml"}, map[string][]string{"resources": nil}},
		{"flow sequence with a comment", "resources: [https://example.invalid/crds.yaml, ./app] # two\n",
			[]string{"https://example.invalid/crds.yaml"}, map[string][]string{"resources": {"./app"}}},
		{"envs with a head comment", "secretGenerator:\n  - name: s\n    # from upstream\n    envs:\n      - https://example.invalid/x.env\n",
			[]string{"https://example.invalid/x.env"}, map[string][]string{"secretGenerator[s].envs": nil}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := kyaml.Parse(tc.text)
			if err != nil {
				t.Fatal(err)
			}
			es := entries(n)
			var drop []entry
			for _, e := range es {
				if slices.Contains(tc.drop, e.value) {
					drop = append(drop, e)
				}
			}
			if len(drop) != len(tc.drop) {
				t.Fatalf("entries %v: not all of %v found", es, tc.drop)
			}
			for _, e := range slices.Backward(drop) {
				if err := e.drop(n); err != nil {
					t.Fatal(err)
				}
			}
			s, err := n.String()
			if err != nil {
				t.Fatal(err)
			}
			var k kustypes.Kustomization
			if err := yaml.Unmarshal([]byte(s), &k); err != nil {
				t.Fatalf("the file left is invalid: %v\n%s", err, s)
			}
			n2, err := kyaml.Parse(s)
			if err != nil {
				t.Fatalf("the file left does not parse: %v\n%s", err, s)
			}
			got := map[string][]string{}
			for _, e := range entries(n2) {
				got[e.field] = append(got[e.field], e.value)
			}
			for f, want := range tc.want {
				if !slices.Equal(got[f], want) {
					t.Errorf("%s = %v, want %v\n%s", f, got[f], want, s)
				}
			}
			if strings.Contains(s, "example.invalid/a.json") && slices.Contains(tc.drop, "https://example.invalid/a.json") {
				t.Errorf("a dropped entry is still there:\n%s", s)
			}
		})
	}
}
