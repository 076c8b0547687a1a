package artifactgen

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	swapi "github.com/fluxcd/source-watcher/api/v2/v1beta1"
)

// writeTree writes files (slash path → content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// readTree is every regular file under dir (slash path → content).
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tgz is a gzipped tarball of files.
func tgz(t *testing.T, files map[string]string) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if err := tw.WriteHeader(&tar.Header{Name: p, Mode: 0o644, Size: int64(len(files[p])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(files[p])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func cp(from, to string, exclude ...string) swapi.CopyOperation {
	return swapi.CopyOperation{From: from, To: to, Exclude: exclude}
}

// TestBuild is source-watcher v2.2's copy semantics, clause by clause: the
// cases are those of its internal/builder/builder_test.go (TestBuild,
// TestBuildErrors, the exclude, merge and extract tables), with our files.
func TestBuild(t *testing.T) {
	infra := map[string]string{
		"infrastructure/controllers/descheduler/release.yaml":    "d",
		"infrastructure/controllers/sealed-secrets/release.yaml": "s",
		"infrastructure/configs/issuer.yaml":                     "i",
	}
	cases := []struct {
		name    string
		sources map[string]map[string]string
		copy    []swapi.CopyOperation
		want    map[string]string
		wantErr string
	}{
		{name: "single file", sources: map[string]map[string]string{"src": {"a/app.yaml": "app"}},
			copy: []swapi.CopyOperation{cp("@src/a/app.yaml", "@artifact/app.yaml")}, want: map[string]string{"app.yaml": "app"}},
		{name: "glob keeps the match's path", sources: map[string]map[string]string{"src": {"m/a.yaml": "a", "m/b.yaml": "b", "m/c.json": "c"}},
			copy: []swapi.CopyOperation{cp("@src/m/*.yaml", "@artifact/out/")}, want: map[string]string{"out/m/a.yaml": "a", "out/m/b.yaml": "b"}},
		{name: "root to root", sources: map[string]map[string]string{"src": {"root.yaml": "r", "sub/n.yaml": "n"}},
			copy: []swapi.CopyOperation{cp("@src/", "@artifact/")}, want: map[string]string{"root.yaml": "r", "sub/n.yaml": "n"}},
		{name: "** is one level under fs.Glob, directories copied whole", sources: map[string]map[string]string{"src": {"root.yaml": "r", "sub/deep/n.yaml": "n"}},
			copy: []swapi.CopyOperation{cp("@src/**", "@artifact/")}, want: map[string]string{"root.yaml": "r", "sub/deep/n.yaml": "n"}},
		{name: "later copies overwrite, others stay", sources: map[string]map[string]string{
			"one": {"config/app.yaml": "1", "config/db.yaml": "1"},
			"two": {"config/app.yaml": "2", "config/net.yaml": "2"}},
			copy: []swapi.CopyOperation{cp("@one/**", "@artifact/"), cp("@two/**", "@artifact/")},
			want: map[string]string{"config/app.yaml": "2", "config/db.yaml": "1", "config/net.yaml": "2"}},
		{name: "directory without slash becomes a subdirectory", sources: map[string]map[string]string{"src": {"config/a.yaml": "a"}},
			copy: []swapi.CopyOperation{cp("@src/config", "@artifact/dest")}, want: map[string]string{"dest/config/a.yaml": "a"}},
		{name: "directory with slash becomes a subdirectory", sources: map[string]map[string]string{"src": {"config/a.yaml": "a"}},
			copy: []swapi.CopyOperation{cp("@src/config/", "@artifact/dest/")}, want: map[string]string{"dest/config/a.yaml": "a"}},
		{name: "file into a directory named with a slash", sources: map[string]map[string]string{"src": {"c.yaml": "c"}},
			copy: []swapi.CopyOperation{cp("@src/c.yaml", "@artifact/dest/")}, want: map[string]string{"dest/c.yaml": "c"}},
		{name: "dir/** strips the prefix", sources: map[string]map[string]string{"src": {"config/a.yaml": "a", "config/sub/b.yaml": "b"}},
			copy: []swapi.CopyOperation{cp("@src/config/**", "@artifact/dest/")}, want: map[string]string{"dest/a.yaml": "a", "dest/sub/b.yaml": "b"}},
		{name: "file to file", sources: map[string]map[string]string{"chart": {"Chart.yaml": "c", "values.yaml": "v"}, "repo": {"charts/prod.yaml": "p"}},
			copy: []swapi.CopyOperation{cp("@chart/**", "@artifact/"), cp("@repo/charts/prod.yaml", "@artifact/podinfo/values.yaml")},
			want: map[string]string{"Chart.yaml": "c", "values.yaml": "v", "podinfo/values.yaml": "p"}},
		{name: "file into an existing directory", sources: map[string]map[string]string{"src": {"f1": "1", "subdir/f2": "2"}},
			copy: []swapi.CopyOperation{cp("@src/subdir/", "@artifact/"), cp("@src/f1", "@artifact/subdir")}, want: map[string]string{"subdir/f1": "1", "subdir/f2": "2"}},
		{name: "exclude by extension at any depth", sources: map[string]map[string]string{"src": {"app.yaml": "a", "README.md": "r", "d/notes.md": "n"}},
			copy: []swapi.CopyOperation{cp("@src/**", "@artifact/", "*.md")}, want: map[string]string{"app.yaml": "a"}},
		{name: "exclude a directory recursively", sources: map[string]map[string]string{"src": {"app.yaml": "a", "testdata/t.yaml": "t", "configs/p.yaml": "p"}},
			copy: []swapi.CopyOperation{cp("@src/**", "@artifact/", "**/testdata/**")}, want: map[string]string{"app.yaml": "a", "configs/p.yaml": "p"}},
		{name: "exclude a single file copy", sources: map[string]map[string]string{"src": {"secret.yaml": "s"}},
			copy: []swapi.CopyOperation{cp("@src/secret.yaml", "@artifact/config.yaml", "secret.yaml")}, want: map[string]string{}},
		{name: "exclude by the path from the source root", sources: map[string]map[string]string{"src": infra},
			copy: []swapi.CopyOperation{cp("@src/infrastructure/**", "@artifact/", "infrastructure/controllers/descheduler/**")},
			want: map[string]string{"controllers/sealed-secrets/release.yaml": "s", "configs/issuer.yaml": "i"}},
		{name: "exclude by the path from the selection root", sources: map[string]map[string]string{"src": infra},
			copy: []swapi.CopyOperation{cp("@src/infrastructure/**", "@artifact/", "controllers/descheduler/**")},
			want: map[string]string{"controllers/sealed-secrets/release.yaml": "s", "configs/issuer.yaml": "i"}},
		{name: "exclude in a non-glob directory copy", sources: map[string]map[string]string{"src": infra},
			copy: []swapi.CopyOperation{cp("@src/infrastructure", "@artifact/", "controllers/descheduler/**")},
			want: map[string]string{"infrastructure/controllers/sealed-secrets/release.yaml": "s", "infrastructure/configs/issuer.yaml": "i"}},
		{name: "exclude is not anchored at the walk's root", sources: map[string]map[string]string{"src": {
			"infrastructure/descheduler/release.yaml": "top", "infrastructure/controllers/descheduler/release.yaml": "nested"}},
			copy: []swapi.CopyOperation{cp("@src/infrastructure/**", "@artifact/", "descheduler/**")},
			want: map[string]string{"controllers/descheduler/release.yaml": "nested"}},
		{name: "merge: maps deep, lists replaced, documents folded", sources: map[string]map[string]string{
			"chart": {"values.yaml": "a: 1\nm:\n  x: 1\n  k: 1\nl: [1, 2]\n"},
			"repo":  {"prod.yaml": "m:\n  k: 2\nl: [3]\n---\nb: 2\n"}},
			copy: []swapi.CopyOperation{cp("@chart/values.yaml", "@artifact/values.yaml"),
				{From: "@repo/prod.yaml", To: "@artifact/values.yaml", Strategy: swapi.MergeStrategy}},
			want: map[string]string{"values.yaml": "a: 1\nb: 2\nl:\n- 3\nm:\n  k: 2\n  x: 1\n"}},
		{name: "merge onto nothing is a copy", sources: map[string]map[string]string{"repo": {"prod.yaml": "b: 2\n"}},
			copy: []swapi.CopyOperation{{From: "@repo/prod.yaml", To: "@artifact/values.yaml", Strategy: swapi.MergeStrategy}},
			want: map[string]string{"values.yaml": "b: 2\n"}},
		{name: "extract a tarball", sources: map[string]map[string]string{"src": {"dist/app.tgz": ""}},
			copy: []swapi.CopyOperation{{From: "@src/dist/app.tgz", To: "@artifact/app", Strategy: swapi.ExtractStrategy}},
			want: map[string]string{"app/deploy.yaml": "kind: Deployment"}},
		{name: "extract by ** glob skips what is not a tarball", sources: map[string]map[string]string{"src": {"dist/app.tgz": "", "dist/x/README": "r"}},
			copy: []swapi.CopyOperation{{From: "@src/**/*.tgz", To: "@artifact/", Strategy: swapi.ExtractStrategy}},
			want: map[string]string{"deploy.yaml": "kind: Deployment"}},
		{name: "the archive drops what the default source-ignore drops", sources: map[string]map[string]string{"src": {"a.yaml": "a", ".sops.yaml": "s", ".github/ci.yaml": "c", "logo.png": "p"}},
			copy: []swapi.CopyOperation{cp("@src/", "@artifact/")}, want: map[string]string{"a.yaml": "a"}},

		{name: "a missing source", sources: map[string]map[string]string{"src": {}},
			copy: []swapi.CopyOperation{cp("@src/none.yaml", "@artifact/")}, wantErr: "source 'none.yaml' does not exist"},
		{name: "a glob matching nothing", sources: map[string]map[string]string{"src": {"a.yaml": "a"}},
			copy: []swapi.CopyOperation{cp("@src/*.json", "@artifact/")}, wantErr: "no files match pattern '*.json' in source 'src'"},
		{name: "an invalid glob", sources: map[string]map[string]string{"src": {"a.yaml": "a"}},
			copy: []swapi.CopyOperation{cp("@src/[", "@artifact/")}, wantErr: "invalid glob pattern '['"},
		{name: "an unknown alias", sources: map[string]map[string]string{"src": {}},
			copy: []swapi.CopyOperation{cp("@other/a", "@artifact/")}, wantErr: "source alias 'other' not found"},
		{name: "all excluded", sources: map[string]map[string]string{"src": {"a.md": "a"}},
			copy: []swapi.CopyOperation{cp("@src/*.md", "@artifact/", "*.md")}, wantErr: "all files matching pattern '*.md' in source 'src' were excluded"},
		{name: "an invalid exclude", sources: map[string]map[string]string{"src": {"a.md": "a"}},
			copy: []swapi.CopyOperation{cp("@src/*.md", "@artifact/", "[")}, wantErr: "invalid exclude pattern '['"},
		{name: "extract of a directory", sources: map[string]map[string]string{"src": {"d/a": "a"}},
			copy: []swapi.CopyOperation{{From: "@src/d", To: "@artifact/", Strategy: swapi.ExtractStrategy}}, wantErr: "extract strategy is not supported for directories, got 'd'"},
		{name: "extract of a plain file", sources: map[string]map[string]string{"src": {"a.yaml": "a"}},
			copy: []swapi.CopyOperation{{From: "@src/a.yaml", To: "@artifact/", Strategy: swapi.ExtractStrategy}}, wantErr: "extract strategy requires tarball file (.tar.gz or .tgz), got 'a.yaml'"},
		{name: "merge of what is not YAML", sources: map[string]map[string]string{"src": {"a.yaml": "a: 1\n", "b.yaml": "- [x\n"}},
			copy:    []swapi.CopyOperation{cp("@src/a.yaml", "@artifact/v.yaml"), {From: "@src/b.yaml", To: "@artifact/v.yaml", Strategy: swapi.MergeStrategy}},
			wantErr: "cannot unmarshal YAML document"},
	}
	bundle := tgz(t, map[string]string{"deploy.yaml": "kind: Deployment"})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			sources := map[string]string{}
			for alias, files := range tc.sources {
				dir := filepath.Join(tmp, "sources", alias)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				for p, c := range files {
					if strings.HasSuffix(p, ".tgz") {
						files[p] = bundle
					} else {
						files[p] = c
					}
				}
				writeTree(t, dir, files)
				sources[alias] = dir
			}
			a, err := Build(context.Background(), swapi.OutputArtifact{Name: "out", Copy: tc.copy}, sources, filepath.Join(tmp, "ws"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "failed to apply copy operations: failed to apply copy operation from '") {
					t.Errorf("error %q does not carry source-watcher's context", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := readTree(t, a.Dir); !maps.Equal(got, tc.want) {
				t.Errorf("staged %v\nwant %v", got, tc.want)
			}
			for p := range a.Origins {
				if _, ok := tc.want[p]; !ok {
					t.Errorf("origin recorded for %s, which is not staged", p)
				}
			}
		})
	}
}

// TestOrigins: every staged file names the source file(s) it came from.
func TestOrigins(t *testing.T) {
	tmp := t.TempDir()
	writeTree(t, filepath.Join(tmp, "repo"), map[string]string{"apps/a/k.yaml": "a: 1\n", "over/k.yaml": "b: 2\n"})
	a, err := Build(context.Background(), swapi.OutputArtifact{Name: "out", Copy: []swapi.CopyOperation{
		cp("@repo/apps/a/**", "@artifact/"),
		{From: "@repo/over/k.yaml", To: "@artifact/k.yaml", Strategy: swapi.MergeStrategy},
	}}, map[string]string{"repo": filepath.Join(tmp, "repo")}, filepath.Join(tmp, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Origin{{"repo", "apps/a/k.yaml"}, {"repo", "over/k.yaml"}}
	if got := a.Origins["k.yaml"]; !slices.Equal(got, want) {
		t.Errorf("origins %v, want %v", got, want)
	}
}

// TestValidate is source-watcher's validateSpec; TestRequests its
// pathPattern expansion (artifactgenerator_pathpattern.go).
func TestValidate(t *testing.T) {
	gen := func(pp string, names ...string) *swapi.ArtifactGenerator {
		g := &swapi.ArtifactGenerator{}
		g.Spec.PathPattern = pp
		g.Spec.Sources = []swapi.SourceReference{{Alias: "repo", Kind: "GitRepository", Name: "flux-system"}}
		for _, n := range names {
			g.Spec.OutputArtifacts = append(g.Spec.OutputArtifacts, swapi.OutputArtifact{Name: n})
		}
		return g
	}
	dupAlias := gen("", "a")
	dupAlias.Spec.Sources = append(dupAlias.Spec.Sources, dupAlias.Spec.Sources[0])
	badRev := gen("", "a")
	badRev.Spec.OutputArtifacts[0].Revision = "@nope"
	for _, tc := range []struct {
		name string
		g    *swapi.ArtifactGenerator
		want string
	}{
		{"valid", gen("", "a", "b"), ""},
		{"duplicate alias", dupAlias, "duplicate source alias 'repo' found"},
		{"duplicate name", gen("", "a", "a"), "duplicate artifact name 'a' found"},
		{"name not an object name", gen("", "App_1"), `artifact name "App_1" is not a valid Kubernetes object name`},
		{"a template name under pathPattern", gen("@repo/apps/{app}", "{app}-app"), ""},
		{"revision alias unknown", badRev, "artifact a revision source alias 'nope' not found"},
	} {
		err := Validate(tc.g)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestRequests(t *testing.T) {
	tmp := t.TempDir()
	writeTree(t, tmp, map[string]string{"apps/Podinfo/k.yaml": "", "apps/redis/k.yaml": "", "apps/x.yaml": ""})
	sources := map[string]string{"repo": tmp}
	gen := func(pp, name string) *swapi.ArtifactGenerator {
		g := &swapi.ArtifactGenerator{}
		g.Spec.PathPattern = pp
		g.Spec.OutputArtifacts = []swapi.OutputArtifact{{Name: name, Copy: []swapi.CopyOperation{cp("@repo/apps/{app}/**", "@artifact/{app}/")}}}
		return g
	}
	reqs, err := Requests(gen("@repo/apps/{app}", "{app}-app"), sources)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range reqs {
		got = append(got, r.Name+" "+r.Copy[0].From+" "+r.Copy[0].To)
	}
	// Names lower-cased, paths raw; files are not directories.
	want := []string{"podinfo-app @repo/apps/Podinfo/** @artifact/Podinfo/", "redis-app @repo/apps/redis/** @artifact/redis/"}
	if !slices.Equal(got, want) {
		t.Errorf("requests %q, want %q", got, want)
	}
	for _, tc := range []struct{ pp, name, want string }{
		{"repo/apps/{app}", "{app}", "invalid pathPattern format"},
		{"@nope/apps/{app}", "{app}", "source alias nope not found in local sources"},
		{"@repo/apps/{app", "{app}", "missing closing brace"},
		{"@repo/apps/{app}/{app}", "{app}", `duplicate capture variable "app"`},
		{"@repo/apps/{app}", "{other}", `capture variable "other" is not defined by pathPattern`},
		{"@repo/apps/{app}", "same", `both resolve to artifact name "same"`},
	} {
		if _, err := Requests(gen(tc.pp, tc.name), sources); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: error %v, want %q", tc.pp, tc.name, err, tc.want)
		}
	}
}
