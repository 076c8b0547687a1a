package safeio

import (
	"fmt"
	"strings"
	"testing"
)

// laughs is a "billion laughs" document: level i is ten aliases of level
// i-1, so the last level expands to more than 10^levels nodes (a decoder
// visits each alias, then its anchor's nodes). Written under indent
// (a HelmRelease's values) from line first.
func laughs(levels int, indent string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sl0: &l0 [lol]\n", indent)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "%sl%d: &l%d [", indent, i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

// TestAliasBomb: go.yaml.in/yaml/v3's excessive-aliasing rule (decode.go,
// decoder.unmarshal, allowedAliasRatio; the yaml.v2 fork sigs.k8s.io/yaml
// uses has the same), counted without expanding; anchors as people use
// them pass.
func TestAliasBomb(t *testing.T) {
	release := "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: app\nspec:\n  values:\n"
	tests := []struct {
		name string
		doc  string
		line int
		why  string // "" passes
	}{
		{"no alias", release + "    replicas: 1\n", 0, ""},
		{"merge keys as people write them", "defaults: &d {cpu: 1, memory: 2Gi}\na: {<<: *d, cpu: 2}\nb: *d\nc: *d\n", 0, ""},
		{"a JSON dashboard with & and *", `{"title": "a & b", "expr": "rate(x[5m]) * 2", "url": "/d?a=1&b=2"}`, 0, ""},
		{"not YAML", "#!/bin/sh\nls * && echo &x\n\t: [\n", 0, ""},
		{"small fan-out under the limit", laughs(2, ""), 0, ""},
		{"billion laughs in a HelmRelease's values", release + laughs(9, "    "), 16, "expand the document to 3,580,246,925 nodes"},
		{"the bomb in the second document", "a: 1\n---\n" + laughs(9, ""), 12, "(the alias *l8 alone: 322,222,221)"},
		{"deeper than int64", laughs(30, ""), 21, "more than 9 quintillion"},
		{"an alias inside its own anchor", "a: &a [x, *a]\n", 1, "inside its own anchor &a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line, why := AliasBomb([]byte(tc.doc))
			if tc.why == "" {
				if why != "" {
					t.Fatalf("refused: line %d: %s", line, why)
				}
				return
			}
			if !strings.Contains(why, tc.why) || line != tc.line {
				t.Fatalf("got line %d %q, want line %d and %q", line, why, tc.line, tc.why)
			}
		})
	}
}
