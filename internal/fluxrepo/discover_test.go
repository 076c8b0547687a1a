package fluxrepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// rootKS is a root Kustomization document applying path.
func rootKS(path string) string {
	return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: " + path + "\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
}

// writeRepo writes files (slash path -> content) under a new directory.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for f, c := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// summary is "path: form at file:line; …" of each root, one a line.
func summary(roots []Root) string {
	var b strings.Builder
	for _, r := range roots {
		b.WriteString(r.Path + ":")
		if r.Namespace+"/"+r.Name != "flux-system/flux-system" {
			b.WriteString(" [" + r.Namespace + "/" + r.Name + "]")
		}
		for _, d := range r.By {
			b.WriteString(" " + d.Form + " at " + d.Location.String() + ";")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Discover finds every root a repository declares, in each form Load
// understands, and says where; what it passes over is a note.
func TestDiscover(t *testing.T) {
	t.Parallel()
	const layouts = "../../testdata/layouts/"
	linked := writeRepo(t, map[string]string{"clusters/dev/sync.yaml": rootKS("./clusters/dev")})
	outside := writeRepo(t, map[string]string{"real/sync.yaml": rootKS("./clusters/linked")})
	if err := os.Symlink(filepath.Join(outside, "real"), filepath.Join(linked, "clusters", "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "real", "sync.yaml"), filepath.Join(linked, "clusters", "dev", "linked.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		repo string
		max  int64
		// want is summary(roots); notes are texts some note holds.
		want  string
		notes []string
	}{
		{name: "three clusters, three forms", repo: layouts + "multi",
			want: "clusters/dev: root Kustomization at clusters/dev/sync.yaml:8;\n" +
				"clusters/prod: flux bootstrap gotk-sync.yaml at clusters/prod/flux-system/gotk-sync.yaml:23;\n" +
				"kubernetes/edge: FluxInstance spec.sync.path at bootstrap/flux-instance.yaml:16;\n",
			notes: []string{"clusters/base: no root declares it"}},
		{name: "flux bootstrap's layout", repo: layouts + "bootstrap",
			want: "clusters/production: flux bootstrap gotk-sync.yaml at clusters/production/flux-system/gotk-sync.yaml:23;\n" +
				"clusters/staging: flux bootstrap gotk-sync.yaml at clusters/staging/flux-system/gotk-sync.yaml:23;\n"},
		{name: "flux bootstrap's placeholders", repo: layouts + "placeholder",
			want: "clusters/production: flux bootstrap placeholder gotk-sync.yaml at clusters/production/flux-system/gotk-sync.yaml;\n" +
				"clusters/staging: flux bootstrap placeholder gotk-sync.yaml at clusters/staging/flux-system/gotk-sync.yaml;\n"},
		{name: "the flux-instance chart's values, twice", repo: layouts + "operator",
			want: "kubernetes/flux/cluster: FluxInstance spec.sync.path at bootstrap/helmfile.d/values-flux-instance.yaml:9; FluxInstance spec.sync.path at kubernetes/apps/flux-system/flux-instance/app/helmrelease.yaml:"},
		{name: "FluxInstances in the clusters' directories", repo: layouts + "fleet",
			want: "clusters/prod: FluxInstance spec.sync.path at clusters/prod/flux-system/flux-instance.yaml:18;\nclusters/staging: FluxInstance spec.sync.path at clusters/staging/flux-system/flux-instance.yaml:"},
		{name: "a root applied by hand", repo: writeRepo(t, map[string]string{
			"bootstrap/root.yaml":   "---\n" + rootKS("./clusters/lab"),
			"clusters/lab/app.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
		}),
			want: "clusters/lab: hand-applied root Kustomization at bootstrap/root.yaml:9;\n"},
		{name: "a root at the repository's root", repo: writeRepo(t, map[string]string{"sync.yaml": rootKS("./")}),
			want: ".: root Kustomization at sync.yaml:8;\n"},
		{name: "passed over, each said", repo: writeRepo(t, map[string]string{
			"clusters/a/sync.yaml": rootKS("./clusters/${CLUSTER}"),
			"clusters/b/sync.yaml": rootKS("./clusters/gone"),
			"clusters/c/sync.yaml": rootKS("../elsewhere"),
			// Another root name, another namespace: not the root.
			"clusters/d/sync.yaml": strings.Replace(rootKS("./clusters/d"), "name: flux-system\n  namespace", "name: apps\n  namespace", 1),
			"clusters/e/sync.yaml": strings.Replace(rootKS("./clusters/e"), "namespace: flux-system", "namespace: tenant", 1),
			// Not a Flux Kustomization.
			"clusters/f/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nmetadata:\n  name: flux-system\npath: ./clusters/f\n",
		}),
			want:  "",
			notes: []string{"clusters/a/sync.yaml:8: spec.path ./clusters/${CLUSTER} is written with a variable", "clusters/b/sync.yaml:8: spec.path ./clusters/gone is not a directory of this repository", "clusters/c/sync.yaml:8: spec.path ../elsewhere is not inside the repository", "clusters/d: no root declares it", "clusters/e: no root declares it", "clusters/f: no root declares it"}},
		{name: "a file over the bound is not read", repo: writeRepo(t, map[string]string{"clusters/dev/sync.yaml": rootKS("./clusters/dev") + "# " + strings.Repeat("x", 200) + "\n"}), max: 100,
			want: "", notes: []string{"clusters/dev/sync.yaml: larger than 100 bytes, not read"}},
		{name: ".sourceignore leaves a file out, as the artifact does", repo: writeRepo(t, map[string]string{".sourceignore": "clusters/old/\n", "clusters/old/sync.yaml": rootKS("./clusters/old"), "clusters/new/sync.yaml": rootKS("./clusters/new")}),
			want: "clusters/new: root Kustomization at clusters/new/sync.yaml:8;\n"},
		{name: "no symlink is followed", repo: linked,
			want: "clusters/dev: root Kustomization at clusters/dev/sync.yaml:8;\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			roots, notes, err := Discover(tc.repo, Options{MaxFileBytes: tc.max})
			if err != nil {
				t.Fatal(err)
			}
			got := summary(roots)
			if !strings.HasPrefix(got, tc.want) || tc.want == "" && got != "" {
				t.Errorf("roots:\n%s\nwant (a prefix of):\n%s", got, tc.want)
			}
			all := strings.Join(notes, "\n")
			for _, n := range tc.notes {
				if !strings.Contains(all, n) {
					t.Errorf("no note %q in:\n%s", n, all)
				}
			}
		})
	}
}

// A --repo that is not a directory is the caller's input error.
func TestDiscoverNotADirectory(t *testing.T) {
	t.Parallel()
	f := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Discover(f, Options{}); !verify.IsInput(err) || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("err = %v, want an input error", err)
	}
}

// The root's name and namespace are the caller's (--namespace, --root).
func TestDiscoverRootName(t *testing.T) {
	t.Parallel()
	repo := writeRepo(t, map[string]string{"k/cluster.yaml": strings.Replace(rootKS("./k"), "name: flux-system\n  namespace", "name: cluster\n  namespace", 1)})
	for _, tc := range []struct {
		root, want string
	}{{"", ""}, {"cluster", "k: [flux-system/cluster] root Kustomization at k/cluster.yaml:8;\n"}} {
		roots, _, err := Discover(repo, Options{RootName: tc.root})
		if err != nil || summary(roots) != tc.want {
			t.Errorf("--root %q: %q, %v; want %q", tc.root, summary(roots), err, tc.want)
		}
	}
}

// namedKS is a Kustomization ns/name applying path from the source
// kind/name.
func namedKS(ns, name, path, kind, source string) string {
	return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\nspec:\n  interval: 10m\n  path: " + path + "\n  prune: true\n  sourceRef:\n    kind: " + kind + "\n    name: " + source + "\n"
}

// gitRepo is a GitRepository ns/name of url.
func gitRepo(ns, name, url string) string {
	return "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\nspec:\n  interval: 1m\n  ref:\n    branch: main\n  url: " + url + "\n"
}

// A root Kustomization of any name is a root when it applies its own
// directory and reads a source the repository declares (the Taskfile
// bootstrap of flux-cluster-template applies it by hand, then it
// manages itself); the default name still wins where it is, each root
// is listed once, and a self-applying one inside another root's
// directory is that root's child.
func TestDiscoverSelfApplying(t *testing.T) {
	t.Parallel()
	const url = "https://git.example.invalid/o/r.git"
	cluster := gitRepo("flux-system", "home", url) + "---\n" + namedKS("flux-system", "cluster", "./k8s/flux", "GitRepository", "home")
	for _, tc := range []struct {
		name  string
		repo  string
		want  string
		notes []string
	}{
		{name: "the Taskfile layout", repo: "../../testdata/layouts/taskfile",
			want: "kubernetes/flux: [flux-system/cluster] self-applying root Kustomization at kubernetes/flux/config/cluster.yaml:25;\n"},
		{name: "its source in another file, an OCIRepository", repo: writeRepo(t, map[string]string{
			"k8s/flux/config/cluster.yaml": namedKS("flux-system", "cluster", "./k8s/flux", "OCIRepository", "home"),
			"k8s/flux/config/source.yaml":  "apiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: home\n  namespace: flux-system\nspec:\n  url: oci://ghcr.io/o/r\n",
		}), want: "k8s/flux: [flux-system/cluster] self-applying root Kustomization at k8s/flux/config/cluster.yaml:8;\n"},
		// Negative controls: each condition is load-bearing.
		{name: "its source not declared", repo: writeRepo(t, map[string]string{"k8s/flux/config/cluster.yaml": namedKS("flux-system", "cluster", "./k8s/flux", "GitRepository", "home")}), want: ""},
		{name: "its source another name", repo: writeRepo(t, map[string]string{"k8s/flux/config/cluster.yaml": gitRepo("flux-system", "other", url) + "---\n" + namedKS("flux-system", "cluster", "./k8s/flux", "GitRepository", "home")}), want: ""},
		{name: "its source in another namespace", repo: writeRepo(t, map[string]string{"k8s/flux/config/cluster.yaml": gitRepo("other", "home", url) + "---\n" + namedKS("flux-system", "cluster", "./k8s/flux", "GitRepository", "home")}), want: ""},
		{name: "a Bucket source", repo: writeRepo(t, map[string]string{"k8s/flux/config/cluster.yaml": strings.ReplaceAll(cluster, "GitRepository", "Bucket")}), want: ""},
		{name: "applied by hand, outside its directory", repo: writeRepo(t, map[string]string{
			"bootstrap/cluster.yaml": strings.Replace(cluster, "./k8s/flux", "./k8s/apps", 1), "k8s/apps/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n",
		}), want: ""},
		{name: "both forms, each root once", repo: writeRepo(t, map[string]string{
			"clusters/dev/sync.yaml":       rootKS("./clusters/dev"),
			"k8s/flux/config/cluster.yaml": cluster,
		}), want: "clusters/dev: root Kustomization at clusters/dev/sync.yaml:8;\nk8s/flux: [flux-system/cluster] self-applying root Kustomization at k8s/flux/config/cluster.yaml:"},
		{name: "the default wins at one directory", repo: writeRepo(t, map[string]string{
			"k8s/flux/sync.yaml":           rootKS("./k8s/flux"),
			"k8s/flux/config/cluster.yaml": cluster,
		}), want: "k8s/flux: root Kustomization at k8s/flux/sync.yaml:8;\n",
			notes: []string{"k8s/flux/config/cluster.yaml:19: Kustomization flux-system/cluster applies its own directory k8s/flux, whose root is flux-system/flux-system: not a root of its own"}},
		{name: "inside another root's directory", repo: writeRepo(t, map[string]string{
			"k8s/flux/config/cluster.yaml":    cluster,
			"k8s/flux/tenants/tenant.yaml":    namedKS("flux-system", "tenants", "./k8s/flux/tenants", "GitRepository", "home"),
			"k8s/flux/tenants/team/team.yaml": namedKS("flux-system", "team", "./k8s/flux/tenants/team", "GitRepository", "home"),
		}), want: "k8s/flux: [flux-system/cluster] self-applying root Kustomization at k8s/flux/config/cluster.yaml:19;\n",
			notes: []string{"k8s/flux/tenants/tenant.yaml:8: Kustomization flux-system/tenants applies its own directory k8s/flux/tenants, inside the cluster root k8s/flux", "k8s/flux/tenants/team/team.yaml:8: Kustomization flux-system/team applies its own directory k8s/flux/tenants/team, inside the cluster root k8s/flux"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			roots, notes, err := Discover(tc.repo, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := summary(roots)
			if !strings.HasPrefix(got, tc.want) || tc.want == "" && got != "" {
				t.Errorf("roots:\n%s\nwant (a prefix of):\n%s", got, tc.want)
			}
			for _, n := range tc.notes {
				if !strings.Contains(strings.Join(notes, "\n"), n) {
					t.Errorf("no note %q in:\n%s", n, strings.Join(notes, "\n"))
				}
			}
		})
	}
}

// The search is bounded: past the bound it stops and says so (not
// parallel: it lowers the package's bound).
func TestDiscoverBound(t *testing.T) {
	files := map[string]string{}
	for _, c := range []string{"a", "b", "c", "d"} {
		files["clusters/"+c+"/sync.yaml"] = rootKS("./clusters/" + c)
	}
	repo := writeRepo(t, files)
	defer func(y, e int, b int64) { maxDiscoverYAML, maxDiscoverEntries, maxDiscoverBytes = y, e, b }(maxDiscoverYAML, maxDiscoverEntries, maxDiscoverBytes)
	for _, tc := range []struct {
		yaml, entries, roots int
		bytes                int64
		note                 string
	}{
		{20000, 200000, 4, 1 << 20, ""},
		{2, 200000, 2, 1 << 20, "stopped after"},
		{20000, 4, 1, 1 << 20, "stopped after"},
		{20000, 200000, 3, 500, "stopped after"},
	} {
		maxDiscoverYAML, maxDiscoverEntries, maxDiscoverBytes = tc.yaml, tc.entries, tc.bytes
		roots, notes, err := Discover(repo, Options{})
		if err != nil || len(roots) != tc.roots || tc.note != "" && !strings.Contains(strings.Join(notes, "\n"), tc.note) {
			t.Errorf("bound %d YAML files, %d entries: %d roots %v, notes %q; want %d roots and %q", tc.yaml, tc.entries, len(roots), err, notes, tc.roots, tc.note)
		}
	}
}

// TestEntry: of roots found together, the one that brings every other up
// (a nested root, a FluxInstance declared under its directory) is the one
// to bring up; roots of several clusters have none.
func TestEntry(t *testing.T) {
	t.Parallel()
	fi := func(file string) []Declaration {
		return []Declaration{{Form: FormFluxInstance, Location: Location{File: file, Line: 3}}}
	}
	sa := []Declaration{{Form: FormSelfApplying, Location: Location{File: "kubernetes/flux/config/cluster.yaml"}}}
	for _, tc := range []struct {
		name  string
		roots []Root
		want  string // "" none
	}{
		{"one root", []Root{{Path: "kubernetes/flux", By: sa}}, "kubernetes/flux"},
		{"nested", []Root{{Path: "clusters/home", By: sa}, {Path: "clusters/home/operator", By: fi("bootstrap/values.yaml")}}, "clusters/home"},
		{"FluxInstance under the Taskfile root", []Root{{Path: "kubernetes/flux", By: sa}, {Path: "kubernetes/main", By: fi("kubernetes/flux/apps/flux-instance.yaml")}}, "kubernetes/flux"},
		{"FluxInstance elsewhere: two clusters", []Root{{Path: "kubernetes/flux", By: sa}, {Path: "kubernetes/main", By: fi("bootstrap/values.yaml")}}, ""},
		{"two environments", []Root{{Path: "clusters/dev"}, {Path: "clusters/prod"}}, ""},
		{"the repository's root brings both", []Root{{Path: "."}, {Path: "clusters/dev"}, {Path: "clusters/prod"}}, "."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := Entry(tc.roots)
			if got := map[bool]string{true: r.Path}[ok]; got != tc.want {
				t.Errorf("Entry: %q (%t), want %q", r.Path, ok, tc.want)
			}
		})
	}
}
