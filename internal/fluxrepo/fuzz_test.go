package fluxrepo

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/homelab-ops/bootstrap/internal/safeio"
)

// seedFiles adds the repository's testdata/ files holding want as seeds.
func seedFiles(f *testing.F, want string) {
	f.Helper()
	_ = filepath.WalkDir("../../testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && len(b) < 4<<10 && strings.Contains(string(b), want) {
			f.Add(b)
		}
		return nil
	})
}

// FuzzMentionsVar: Env.Applied skips the substitution of an object in
// which mentionsVar finds no "${"; that is right only if the YAML the
// controller substitutes (Resource.AsYAML) then holds none either. Any
// manifest kustomize reads.
func FuzzMentionsVar(f *testing.F) {
	seedFiles(f, "${")
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${APP}-db\ndata:\n  a: \"$\"\n  b: \"{x}\"\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  ${K}: v\n"))
	f.Add([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &l {x: \"${A}\"}\ndata: *l\n"))
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, why := safeio.AliasBomb(b); why != "" {
			return // refused before kustomize reads it
		}
		rs, err := rf.SliceFromBytes(b)
		if err != nil {
			return
		}
		for _, r := range rs {
			y, err := r.AsYAML()
			if err != nil {
				continue
			}
			if strings.Contains(string(y), "${") && !mentionsVar(r.YNode(), map[*yaml.Node]bool{}) {
				t.Fatalf("AsYAML holds ${ but mentionsVar finds none:\n%s", y)
			}
		}
	})
}

// FuzzSyncDeclarations: the FluxInstance declaration reader (a
// FluxInstance's spec.sync, a flux-instance chart's values.instance.sync,
// a values file's instance.sync, with kustomize.patches) over any file of
// a repository: no panic, and every declaration it returns has a path and
// a line inside the file.
func FuzzSyncDeclarations(f *testing.F) {
	seedFiles(f, "sync")
	f.Add([]byte("apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata:\n  name: flux\nspec:\n  sync:\n    kind: GitRepository\n    url: https://example.com/r.git\n    path: clusters/dev\n  kustomize:\n    patches: {}\n"))
	f.Add([]byte("instance:\n  sync:\n    path: ./x\n  kustomize:\n    patches:\n    - patch: x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ix := &fileIndex{copied: []copiedFile{{rel: "flux-instance.yaml", b: b}}}
		lines := strings.Count(string(b), "\n") + 1
		for _, d := range ix.syncDeclarations() {
			if d.sync.Path == "" {
				t.Fatalf("a declaration without a path: %+v", d)
			}
			if d.loc.File != "flux-instance.yaml" || d.loc.Line < 1 || d.loc.Line > lines {
				t.Fatalf("declaration at %s, outside the file's %d lines", d.loc, lines)
			}
			if d.patchesField != "" && (d.patchesLoc.Line < 1 || d.patchesLoc.Line > lines) {
				t.Fatalf("patches at %s, outside the file's %d lines", d.patchesLoc, lines)
			}
		}
	})
}
