package fluxrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// altSource is a GitRepository flux-system/home-ops-alt of url at branch.
func altSource(url, branch string) string {
	return "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: home-ops-alt\n  namespace: flux-system\nspec:\n  interval: 30m\n  ref:\n    branch: " + branch + "\n  url: " + url + "\n"
}

// altReader is a Kustomization flux-system/extra reading home-ops-alt at
// ./kubernetes/extra.
const altReader = "---\napiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: extra\n  namespace: flux-system\nspec:\n  interval: 30m\n  path: ./kubernetes/extra\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: home-ops-alt\n"

// TestSecondSource: a Kustomization reading a second GitRepository of this
// repository (its URL the root source's as source-controller reaches it)
// is built from this checkout as the root's are, with a note when its ref
// differs, wherever the walk renders that GitRepository; one of another
// URL stays another repository, one whose source nothing renders is
// noted as never applied. Both not built.
func TestSecondSource(t *testing.T) {
	t.Parallel()
	const url = "https://git.example.invalid/owner/home-ops.git"
	for _, tc := range []struct {
		name string
		// source is where the alternative GitRepository is rendered
		// (a file and its text), "" file: nowhere.
		file, source string
		built        bool
		note         string
	}{
		{name: "same URL without .git", file: "kubernetes/flux/apps.yaml", source: altSource("https://git.example.invalid/owner/home-ops", "main"), built: true},
		{name: "same URL, scheme and host case, a trailing slash", file: "kubernetes/flux/apps.yaml", source: altSource("HTTPS://Git.Example.Invalid:443/owner/home-ops/", "main"), built: true},
		{name: "rendered by a later build than its reader", file: "kubernetes/apps/default/namespace.yaml", source: altSource("https://git.example.invalid/owner/home-ops", "main"), built: true},
		{name: "another ref", file: "kubernetes/flux/apps.yaml", source: altSource(url, "dev"), built: true,
			note: `reads GitRepository/flux-system/home-ops-alt, a second source of this repository (its URL is the root source GitRepository/flux-system/home-kubernetes's), at ref {"branch":"dev"}, not the root source's {"branch":"main"}: checked at this checkout`},
		{name: "another repository", file: "kubernetes/flux/apps.yaml", source: altSource("https://git.example.invalid/owner/other-ops.git", "main"),
			note: "reads GitRepository/flux-system/home-ops-alt, not the root's source GitRepository/flux-system/home-kubernetes: its path is not in this repository and was not built"},
		{name: "nothing renders it",
			note: "reads GitRepository/flux-system/home-ops-alt, which nothing in the environment renders (not the root's source GitRepository/flux-system/home-kubernetes): kustomize-controller waits for it forever (Source not found)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := copyTree(t, "../../testdata/layouts/taskfile")
			edit(t, repo, "kubernetes/flux/apps.yaml", "", altReader)
			if tc.file != "" {
				edit(t, repo, tc.file, "", tc.source)
			}
			if err := os.MkdirAll(filepath.Join(repo, "kubernetes", "extra"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, repo, "kubernetes/extra/config.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n  namespace: default\n")
			e, err := Load(Options{Repo: repo, Path: "kubernetes/flux", RootName: "cluster"})
			if err != nil {
				t.Fatal(err)
			}
			k := e.Kustomization("flux-system", "extra")
			if k == nil || k.Built != tc.built || k.OtherSource == tc.built || tc.built && (len(k.Resources) != 1 || k.Resources[0].GetName() != "extra") {
				t.Fatalf("extra: %+v\nnotes %q", k, e.Notes)
			}
			if (e.SourceOf(k) == nil) != (tc.file == "") {
				t.Errorf("SourceOf(extra) = %+v", e.SourceOf(k))
			}
			found := tc.note == ""
			for _, n := range e.Notes {
				if tc.note != "" && strings.HasPrefix(n, "Kustomization flux-system/extra (kubernetes/flux/apps.yaml:") && strings.Contains(n, tc.note) {
					found = true
				}
				if tc.note == "" && strings.Contains(n, "flux-system/extra") {
					t.Errorf("a note on extra: %s", n)
				}
			}
			if !found {
				t.Errorf("no note %q in %q", tc.note, e.Notes)
			}
		})
	}
}
