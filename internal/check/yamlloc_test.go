package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// exprLines: where a ${…} is written comes from the YAML node holding it
// — a block scalar's line plus the line within its value — not from the
// first line of the text that mentions it (a comment, another document).
func TestExprLines(t *testing.T) {
	t.Parallel()
	docs := []struct {
		name, doc, text string
		want            []int // lines within the document (1: its first)
	}{
		{name: "the 3rd line of a literal block", text: "${X}", want: []int{7},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  run.sh: |\n    set -e\n    cd /app\n    echo ${X}\n    exit 0\n"},
		{name: "a literal block with a leading empty line and an indentation indicator", text: "${X}", want: []int{6},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  run.sh: |2\n\n     echo ${X}\n"},
		{name: "a literal block's # line is its content", text: "${X}", want: []int{5},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  app.conf: |\n    # listen ${X}\n"},
		{name: "a folded block", text: "${X}", want: []int{6},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  note: >\n    one\n    two ${X}\n"},
		{name: "a double-quoted value over two lines", text: "${X}", want: []int{5},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  note: \"one\n    two ${X}\"\n"},
		{name: "a comment line before it", text: "${X}", want: []int{5},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  # was ${X}\n  v: ${X}\n"},
		{name: "a trailing comment before it", text: "${X}", want: []int{5},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  u: plain # was ${X}\n  v: ${X}\n"},
		{name: "a comment below it", text: "${X}", want: []int{4},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  v: ${X}\n  # was ${X}\n  w: plain\n"},
		{name: "escaped first", text: "${X}", want: []int{6},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  run.sh: |\n    echo $${X}\n    echo ${X}\n"},
		{name: "in a key", text: "${X}", want: []int{4},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  ${X}.conf: plain\n"},
		{name: "every line of it", text: "${X:-", want: []int{4, 6, 7},
			doc: "kind: ConfigMap\nmetadata: {name: a}\ndata:\n  v: ${X:-a}\n  run.sh: |\n    a=${X:-b}\n    b=${X:-c} ${X:-d}\n"},
		{name: "only in a comment", text: "${X}",
			doc: "kind: ConfigMap\nmetadata: {name: a}\n# ${X}\ndata:\n  v: plain\n"},
	}
	// One file of every document, each after "---", and a first document
	// that holds every text too: the object's own document is read.
	var b strings.Builder
	b.WriteString("kind: ConfigMap\nmetadata: {name: first}\ndata:\n  all: ${X} ${X:-a}\n")
	starts := make([]int, len(docs))
	line := 5
	for i, d := range docs {
		b.WriteString("---\n")
		line++
		starts[i] = line
		b.WriteString(d.doc)
		line += strings.Count(d.doc, "\n")
	}
	env := envWith(t, map[string]string{"apps/objects.yaml": b.String()})
	for i, d := range docs {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			decl := fluxrepo.Location{File: "apps/objects.yaml", Line: starts[i]}
			var want []int
			for _, l := range d.want {
				want = append(want, starts[i]+l-1)
			}
			if got := exprLines(env, decl, d.text, false); !slices.Equal(got, want) {
				t.Errorf("exprLines = %v, want %v (the document starts on line %d)", got, want, starts[i])
			}
			if got := exprLines(env, decl, d.text, true); len(want) > 0 && !slices.Equal(got, want[:1]) {
				t.Errorf("exprLines first = %v, want %v", got, want[:1])
			}
		})
	}
}

// envWith is the environment of a repository holding files besides a root
// Kustomization: each file indexed for its lines and nodes.
func envWith(t *testing.T, files map[string]string) *fluxrepo.Env {
	t.Helper()
	files["clusters/dev/flux.yaml"] = gitSource + ksDoc("flux-system", "clusters/dev", false, "")
	env, err := fluxrepo.Load(fluxrepo.Options{Repo: writeRepo(t, files), Path: "clusters/dev"})
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// locate: the node of the declaring document first; text written
// elsewhere (a patch) is found as before, by the line holding it; text
// no file holds (generated) is located at its Kustomization.
func TestLocate(t *testing.T) {
	t.Parallel()
	const deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: apps}\nspec:\n  replicas: 1 # was web:${TAG}\n  template:\n    spec:\n      containers:\n        - name: web\n          image: web:${TAG}\n          args:\n            - |\n              serve\n              --zone=${ZONE}\n"
	env := envWith(t, map[string]string{
		"apps/web.yaml":   deploy,
		"apps/patch.yaml": "- op: add\n  path: /spec/template/spec/containers/0/env\n  value: [{name: R, value: \"${REGION}\"}]\n",
	})
	k := &fluxrepo.Kustomization{Location: appsAt}
	for _, tc := range []struct {
		name, obj, text string
		want            fluxrepo.Location
	}{
		{name: "a value, not the comment before it", obj: deploy, text: "${TAG}", want: fluxrepo.Location{File: "apps/web.yaml", Line: 10}},
		{name: "inside a block scalar", obj: deploy, text: "${ZONE}", want: fluxrepo.Location{File: "apps/web.yaml", Line: 14}},
		{name: "written by a patch", obj: deploy, text: "${REGION}", want: fluxrepo.Location{File: "apps/patch.yaml", Line: 3}},
		{name: "written nowhere", obj: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: made, namespace: apps}\ndata: {a: \"${MADE}\"}\n", text: "${MADE}", want: appsAt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := locate(env, k, object(t, tc.obj), tc.text); got != tc.want {
				t.Errorf("locate = %s, want %s", got, tc.want)
			}
		})
	}
}
