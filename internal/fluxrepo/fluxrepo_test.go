package fluxrepo

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

const clean = "../../testdata/check/clean"

func TestLoadClean(t *testing.T) {
	t.Parallel()
	e, err := Load(Options{Repo: clean, Path: "clusters/dev"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Root == nil || e.Root.Ref() != "flux-system/flux-system" || !e.Root.Built || e.Root.Path != "clusters/dev" {
		t.Fatalf("root: %+v", e.Root)
	}
	if e.Source == nil || e.Source.Location.File != "clusters/base/flux-system/gotk-source.yaml" {
		t.Fatalf("source: %+v", e.Source)
	}
	var refs []string
	for _, k := range e.Kustomizations {
		refs = append(refs, k.Ref()+"@"+k.Location.String()+"<"+k.AppliedBy)
		if !k.Built {
			t.Errorf("%s not built: %s", k.Ref(), k.Note)
		}
	}
	want := []string{
		"flux-system/flux-system@clusters/dev/sync.yaml:1<flux-system/flux-system",
		"flux-system/infra@clusters/base/infrastructure.yaml:1<flux-system/flux-system",
		"flux-system/apps@clusters/base/apps.yaml:1<flux-system/flux-system",
		"flux-system/docs@clusters/base/apps.yaml:25<flux-system/flux-system",
	}
	if strings.Join(refs, "\n") != strings.Join(want, "\n") {
		t.Fatalf("kustomizations:\n%s\nwant:\n%s", strings.Join(refs, "\n"), strings.Join(want, "\n"))
	}
	apps := e.Kustomization("flux-system", "apps")
	if len(apps.Resources) != 6 || strings.Join(apps.Files, ",") != "apps/namespace.yaml,apps/releases.yaml,apps/web.yaml" {
		t.Fatalf("apps (generated kustomization): %d resources, files %v", len(apps.Resources), apps.Files)
	}
	// The HelmReleases and chart sources the apps tier applies, each with its applier.
	if hr := e.HelmRelease("web", "web"); hr == nil || hr.AppliedBy != "flux-system/apps" || hr.Location.File != "apps/releases.yaml" {
		t.Fatalf("HelmRelease web/web: %+v", hr)
	}
	if hr := e.HelmRelease("web", "web-db"); hr == nil || hr.AppliedBy != "flux-system/apps" {
		t.Fatalf("HelmRelease web/web-db: %+v", hr)
	}
	// Unsubstituted.
	y, _ := apps.Resources[5].AsYAML()
	if !strings.Contains(string(y), "${domain}") {
		t.Fatalf("apps objects are substituted:\n%s", y)
	}
	cv := e.Data[DataKey("ConfigMap", "flux-system", "cluster-vars")]
	if cv == nil || cv.Values["environment"] != "dev" || cv.Location.File != "clusters/dev/cluster-vars.yaml" || cv.AppliedBy != "flux-system/flux-system" {
		t.Fatalf("cluster-vars: %+v", cv)
	}
	s := e.Data[DataKey("Secret", "flux-system", "app-secrets")]
	if s == nil || !s.Encrypted || s.Values["dbPassword"] != "<encrypted>" {
		t.Fatalf("sops secret: %+v", s)
	}
	if l := e.FindLine(apps.Files, "", "${domain}"); l.String() != "apps/releases.yaml:54" {
		t.Fatalf("FindLine: %s", l)
	}
	// The repository itself is untouched (no generated kustomization.yaml).
	if _, err := os.Stat(filepath.Join(clean, "apps", "kustomization.yaml")); err == nil {
		t.Fatal("the generator wrote into the repository")
	}
}

func TestLoadHomelab(t *testing.T) {
	t.Parallel()
	e, err := Load(Options{Repo: "../../testdata/homelab", Path: "clusters/prod"})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Kustomizations) != 11 { // the fixture's graph: 11 over 6 levels, 3 of them on the shared source
		t.Fatalf("%d kustomizations, notes %v", len(e.Kustomizations), e.Notes)
	}
}

func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	if _, _, _, err := copyRepo(src, dst, DefaultMaxFileBytes); err != nil {
		t.Fatal(err)
	}
	return dst
}

func edit(t *testing.T, repo, file, old, new string) {
	t.Helper()
	p := filepath.Join(repo, file)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if old != "" && !strings.Contains(string(b), old) {
		t.Fatalf("%s does not contain %q", file, old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, new, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestLoadInputErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, path string
		mutate     func(t *testing.T, repo string)
		want       string
	}{
		{name: "missing path", path: "clusters/nope", want: "no such directory"},
		{name: "escaping --path", path: "../x", want: "inside --repo"},
		{name: "escaping spec.path", path: "clusters/dev", mutate: func(t *testing.T, r string) {
			edit(t, r, "clusters/base/apps.yaml", "path: ./apps", "path: ../outside")
		}, want: `Kustomization flux-system/apps (clusters/base/apps.yaml:1): spec.path "../outside" leaves the repository`},
		{name: "missing spec.path", path: "clusters/dev", mutate: func(t *testing.T, r string) {
			edit(t, r, "clusters/base/apps.yaml", "path: ./apps", "path: ./gone")
		}, want: `Kustomization flux-system/apps (clusters/base/apps.yaml:1): spec.path "./gone" is not a directory`},
		{name: "build error", path: "clusters/dev", mutate: func(t *testing.T, r string) {
			edit(t, r, "infrastructure/kustomization.yaml", "- cni.yaml", "- missing.yaml")
		}, want: `Kustomization flux-system/infra (clusters/base/infrastructure.yaml:1): kustomize build of spec.path "./infrastructure" failed`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := copyTree(t, clean)
			if tc.mutate != nil {
				tc.mutate(t, repo)
			}
			_, err := Load(Options{Repo: repo, Path: tc.path})
			if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want an input error containing %q", err, tc.want)
			}
		})
	}
}

func TestLoadBounds(t *testing.T) {
	t.Parallel()
	repo := copyTree(t, clean)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "leak.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leak}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "docs", "inside.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: inside}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Links of every kind are left out, as source-controller leaves them
	// out of the artifact, and never followed: out of the repository, to a
	// device, dangling, inside it (relative and absolute).
	links := map[string]string{
		"apps/leak.yaml":     filepath.Join(outside, "leak.yaml"),
		"apps/zero.yaml":     "/dev/zero",
		"apps/dangling.yaml": "gone.yaml",
		"apps/link.yaml":     "../docs/inside.yaml",
		"apps/abs.yaml":      filepath.Join(repo, "docs", "inside.yaml"),
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(repo, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(repo, "docs", "big.yaml"), []byte(strings.Repeat("# x\n", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Load(Options{Repo: repo, Path: "clusters/dev", MaxFileBytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(e.Notes, "\n")
	for name, target := range links {
		if want := name + " (a symlink to " + target + "): source-controller leaves symlinks out of the artifact, so it was left out; commit the file itself"; !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	if !strings.Contains(notes, "docs/big.yaml: larger than 2000 bytes") {
		t.Errorf("notes lack the oversized file:\n%s", notes)
	}
	if e.Data[DataKey("ConfigMap", "flux-system", "leak")] != nil {
		t.Fatal("a file outside the repository was read")
	}
}

// TestLoadSymlinkedTempDir: with $TMPDIR behind a symlink (macOS's /var),
// the files a build read are still recorded (age-key decrypts exactly those).
func TestLoadSymlinkedTempDir(t *testing.T) {
	link := filepath.Join(t.TempDir(), "tmp-link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", link)
	e, err := Load(Options{Repo: clean, Path: "clusters/dev"})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.RootFiles) == 0 || !slices.Contains(e.RootFiles, "clusters/dev/kustomization.yaml") {
		t.Fatalf("root files %v, want clusters/dev/kustomization.yaml among them", e.RootFiles)
	}
}

func TestLoadNotBuilt(t *testing.T) {
	t.Parallel()
	repo := copyTree(t, clean)
	edit(t, repo, "clusters/base/apps.yaml", "path: ./docs\n  prune: true\n  sourceRef:\n    kind: GitRepository", "path: ./docs\n  prune: true\n  sourceRef:\n    kind: OCIRepository")
	// The OCIRepository it reads is rendered, of another repository.
	edit(t, repo, "clusters/base/apps.yaml", "", "---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: OCIRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  interval: 1m\n  url: oci://registry.example.invalid/other\n  ref:\n    tag: latest\n")
	// A remote base two levels down: infrastructure -> ./base -> remote.
	if err := os.MkdirAll(filepath.Join(repo, "infrastructure", "base"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "infrastructure", "base", "kustomization.yaml"), []byte("resources:\n  - https://github.com/example/remote//base?ref=v1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "infrastructure", "kustomization.yaml"), []byte("resources:\n  - cni.yaml\n  - base\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Load(Options{Repo: repo, Path: "clusters/dev"})
	if err != nil {
		t.Fatal(err)
	}
	docs, infra := e.Kustomization("flux-system", "docs"), e.Kustomization("flux-system", "infra")
	if docs.Built || !strings.Contains(docs.Note, "reads OCIRepository/flux-system/flux-system, not the root's source") {
		t.Fatalf("docs: %v %q", docs.Built, docs.Note)
	}
	if infra.Built || !strings.Contains(infra.Note, "remote bases (https://github.com/example/remote//base?ref=v1)") {
		t.Fatalf("infra: %v %q", infra.Built, infra.Note)
	}
}

// The fast build (no OpenAPI reset) renders exactly what fluxkustomize.Build renders.
func TestBuiltinSchemaBuildIsUpstreamBuild(t *testing.T) {
	render := func(repo, path string, upstream bool) string {
		upstreamBuildOnly = upstream
		defer func() { upstreamBuildOnly = false }()
		e, err := Load(Options{Repo: repo, Path: path})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, k := range e.Kustomizations {
			b.WriteString("# " + k.Ref() + " " + strings.Join(k.Files, ",") + "\n")
			for _, r := range k.Resources {
				y, _ := r.AsYAML()
				b.Write(y)
			}
		}
		return b.String()
	}
	for _, c := range [][2]string{{clean, "clusters/dev"}, {"../../testdata/homelab", "clusters/prod"}} {
		fast, upstream := render(c[0], c[1], false), render(c[0], c[1], true)
		if fast != upstream || len(fast) < 1000 {
			t.Fatalf("%s: fast build differs from fluxkustomize.Build:\n%s\n----\n%s", c[0], fast, upstream)
		}
	}
	repo := copyTree(t, clean)
	if SetsOpenAPI(repo) {
		t.Fatal("the clean fixture sets openapi:")
	}
	edit(t, repo, "infrastructure/kustomization.yaml", "", "openapi:\n  version: v1.21.2\n")
	if !SetsOpenAPI(repo) {
		t.Fatal("openapi: not seen")
	}
}

// The copy is what source-controller archives: default exclusions, then
// .sourceignore and the GitRepository's spec.ignore.
func TestLoadSourceIgnore(t *testing.T) {
	t.Parallel()
	notK8s := "name: ci\non: push\njobs: {}\n"
	write := func(repo, p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, p), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Default exclusions: a CI workflow inside a generated directory.
	repo := copyTree(t, clean)
	write(repo, "apps/.github/workflows/ci.yaml", notK8s)
	if _, err := Load(Options{Repo: repo, Path: "clusters/dev"}); err != nil {
		t.Fatalf(".github is not excluded: %v", err)
	}
	// .sourceignore (the defaults then no longer apply, as in source-controller).
	repo = copyTree(t, clean)
	write(repo, "apps/notes/todo.yaml", notK8s)
	if _, err := Load(Options{Repo: repo, Path: "clusters/dev"}); err == nil {
		t.Fatal("a non-Kubernetes YAML in a generated directory built")
	}
	write(repo, ".sourceignore", "apps/notes/\n")
	if _, err := Load(Options{Repo: repo, Path: "clusters/dev"}); err != nil {
		t.Fatalf(".sourceignore not applied: %v", err)
	}
	// spec.ignore of the root's GitRepository.
	repo = copyTree(t, clean)
	write(repo, "apps/notes/todo.yaml", notK8s)
	edit(t, repo, "clusters/base/flux-system/gotk-source.yaml", "  url:", "  ignore: |\n    /apps/notes/\n  url:")
	e, err := Load(Options{Repo: repo, Path: "clusters/dev"})
	if err != nil {
		t.Fatalf("spec.ignore not applied: %v", err)
	}
	if e.Source == nil || e.Source.Spec.Ignore == nil {
		t.Fatalf("source: %+v", e.Source)
	}
}

func TestRootObjects(t *testing.T) {
	t.Parallel()
	e, err := Load(Options{Repo: clean, Path: "clusters/prod"})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := e.RootObjects()
	if err != nil || len(objs) != 7 {
		t.Fatalf("%d objects, %v", len(objs), err)
	}
	if g := e.Source; g == nil || g.AppliedBy != "flux-system/flux-system" || g.Spec.URL != "https://git.example.invalid/fixture.git" {
		t.Fatalf("source: %+v", g)
	}
}

// TestLoadGenerateRoot: a root directory of plain manifests is generated
// as kustomize-controller v1.9.5 generates every path it builds, the root
// included (kustomization_controller.go build: fluxcd/pkg/kustomize's
// NewGenerator(...).WriteFile before Build); no public repository commits
// a kustomization.yaml at its cluster root.
func TestLoadGenerateRoot(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	for name, content := range map[string]string{
		"clusters/dev/flux-system.yaml": "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system, namespace: flux-system}\nspec: {interval: 10m, path: ./clusters/dev, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n",
		"clusters/dev/apps.yaml":        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec: {interval: 10m, path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n",
		"apps/cm.yaml":                  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: default}\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e, err := Load(Options{Repo: repo, Path: "clusters/dev"})
	if err != nil {
		t.Fatal(err)
	}
	apps := e.Kustomization("flux-system", "apps")
	if e.Root == nil || apps == nil || !apps.Built || !slices.Contains(apps.Files, "apps/cm.yaml") {
		t.Fatalf("root %v, apps %+v", e.Root, apps)
	}
}

// TestLoadKeepGoing: a Kustomization whose path does not build fails Load
// (the offline check's input error); with KeepGoing (sync, age-key) it is
// recorded with the same error and the rest of the environment is built.
func TestLoadKeepGoing(t *testing.T) {
	t.Parallel()
	repo := copyTree(t, clean)
	if err := os.WriteFile(filepath.Join(repo, "apps", "kustomization.yaml"), []byte("resources:\n- web.yaml\n- missing.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, strict := Load(Options{Repo: repo, Path: "clusters/dev"})
	if strict == nil || !verify.IsInput(strict) || !strings.Contains(strict.Error(), "missing.yaml") {
		t.Fatalf("strict: err = %v, want an input error naming missing.yaml", strict)
	}
	if strings.Contains(strict.Error(), "fluxrepo-") {
		t.Errorf("the error names the private copy, not the repository: %v", strict)
	}
	e, err := Load(Options{Repo: repo, Path: "clusters/dev", KeepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	var failed *Kustomization
	for _, k := range e.Kustomizations {
		if k.Err != nil {
			failed = k
		}
	}
	if failed == nil || failed.Built || e.Root == nil || !e.Root.Built || e.Err() == nil || e.Err().Error() != strict.Error() {
		t.Fatalf("keep going: failed %+v, root %+v, Err %v (strict %v)", failed, e.Root, e.Err(), strict)
	}
}

// TestLoadKeepGoingErrorsStayBounded: each failing Kustomization's error
// lists what the copy left out once, not the errors of those before it.
func TestLoadKeepGoingErrorsStayBounded(t *testing.T) {
	t.Parallel()
	repo := copyTree(t, clean)
	if err := os.Symlink("nowhere", filepath.Join(repo, "docs", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"apps", "infrastructure"} {
		if err := os.WriteFile(filepath.Join(repo, dir, "kustomization.yaml"), []byte("resources:\n- missing.yaml\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e, err := Load(Options{Repo: repo, Path: "clusters/dev", KeepGoing: true})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for _, k := range e.Kustomizations {
		if k.Err == nil {
			continue
		}
		failed++
		if n := strings.Count(k.Err.Error(), "left out of the copy"); n != 1 {
			t.Errorf("%s: the left-out files are listed %d times: %v", k.Ref(), n, k.Err)
		}
	}
	if failed < 2 {
		t.Fatalf("%d Kustomizations failed, want both broken paths", failed)
	}
}

// TestLoadRepoIsALink: --repo may itself be a link to the checkout.
func TestLoadRepoIsALink(t *testing.T) {
	t.Parallel()
	link := filepath.Join(t.TempDir(), "repo")
	if err := os.Symlink(copyTree(t, clean), link); err != nil {
		t.Fatal(err)
	}
	e, err := Load(Options{Repo: link, Path: "clusters/dev"})
	if err != nil || e.Root == nil || len(e.Kustomizations) < 2 {
		t.Fatalf("load through a linked --repo: %v", err)
	}
}

// TestLoadRenderedTwice: an object two builds render is kept as the first
// build rendered it; the second is a note, unless the first was the root
// directory and the second the Kustomization that applies it (then it is
// that Kustomization's).
func TestLoadRenderedTwice(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(t *testing.T, repo string)
		check func(t *testing.T, e *Env)
	}{{
		name: "a Kustomization rendered again",
		edit: func(t *testing.T, repo string) {
			write(t, repo, "docs/dup.yaml", "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec: {interval: 1m, path: ./elsewhere, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n")
		},
		check: func(t *testing.T, e *Env) {
			apps := e.Kustomization("flux-system", "apps")
			if apps.AppliedBy != "flux-system/flux-system" || apps.Spec.Path != "./apps" {
				t.Errorf("apps: applied by %q, path %q: want the first rendering", apps.AppliedBy, apps.Spec.Path)
			}
			wantNote(t, e, "Kustomization flux-system/apps is rendered again (docs/dup.yaml:1, applied by Kustomization flux-system/docs): the first one is kept")
		},
	}, {
		name: "data rendered again",
		edit: func(t *testing.T, repo string) {
			write(t, repo, "apps/dup.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cluster-vars, namespace: flux-system}\ndata: {environment: prod}\n")
		},
		check: func(t *testing.T, e *Env) {
			cv := e.Data[DataKey("ConfigMap", "flux-system", "cluster-vars")]
			if cv.Values["environment"] != "dev" || cv.AppliedBy != "flux-system/flux-system" {
				t.Errorf("cluster-vars: %+v: want the first rendering", cv)
			}
			wantNote(t, e, "ConfigMap/flux-system/cluster-vars is rendered by Kustomization flux-system/flux-system and again by Kustomization flux-system/apps: the first is used")
		},
	}, {
		name: "the root directory's objects are the Kustomization's that applies them",
		edit: func(t *testing.T, repo string) {
			edit(t, repo, "clusters/dev/sync.yaml", "path: ./clusters/dev", "path: ./clusters/base")
			edit(t, repo, "clusters/base/kustomization.yaml", "resources:\n", "resources:\n  - base-vars.yaml\n")
			write(t, repo, "clusters/base/base-vars.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base-vars, namespace: flux-system}\ndata: {region: eu}\n")
		},
		check: func(t *testing.T, e *Env) {
			if apps := e.Kustomization("flux-system", "apps"); apps.AppliedBy != "flux-system/flux-system" {
				t.Errorf("apps applied by %q, want flux-system/flux-system", apps.AppliedBy)
			}
			if d := e.Data[DataKey("ConfigMap", "flux-system", "base-vars")]; d == nil || d.AppliedBy != "flux-system/flux-system" {
				t.Errorf("base-vars: %+v, want applied by flux-system/flux-system", d)
			}
			if d := e.Data[DataKey("ConfigMap", "flux-system", "cluster-vars")]; d == nil || d.AppliedBy != "" {
				t.Errorf("cluster-vars: %+v, want only the root directory's", d)
			}
			for _, n := range e.Notes {
				if strings.Contains(n, "again") {
					t.Errorf("note %q: a Kustomization applying the root directory's object is no second rendering", n)
				}
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := copyTree(t, clean)
			tc.edit(t, repo)
			e, err := Load(Options{Repo: repo, Path: "clusters/dev"})
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, e)
		})
	}
}

func write(t *testing.T, repo, file, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, filepath.FromSlash(file)), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func wantNote(t *testing.T, e *Env, want string) {
	t.Helper()
	if !slices.Contains(e.Notes, want) {
		t.Errorf("notes %q: want %q", e.Notes, want)
	}
}

// TestSubstituteNotString: a number in postBuild.substitute is refused
// naming the key and the quoting fix (the CRD's schema: a map of strings).
func TestSubstituteNotString(t *testing.T) {
	t.Parallel()
	repo := copyTree(t, clean)
	edit(t, repo, "clusters/base/apps.yaml", "    substitute:\n", "    substitute:\n      replicas: 3\n")
	_, err := Load(Options{Repo: repo, Path: "clusters/dev"})
	if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), `Kustomization flux-system/apps (clusters/base/apps.yaml:1): spec.postBuild.substitute.replicas is a number (3), not a string`) ||
		!strings.Contains(err.Error(), `quote it: replicas: "3"`) {
		t.Fatalf("err = %v", err)
	}
}

// TestSyncDeclarationsOddDocuments: documents that mention "sync" without
// a spec.sync (a kind-less values file without instance:, a FluxInstance
// without spec) are no declaration and no crash.
func TestSyncDeclarationsOddDocuments(t *testing.T) {
	t.Parallel()
	repo := copyTree(t, clean)
	for name, content := range map[string]string{
		"values/volsync.yaml": "volsync:\n  enabled: true\n",
		"values/empty.yaml":   "apiVersion: fluxcd.controlplane.io/v1\nkind: FluxInstance\nmetadata: {name: flux}\n# sync later\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(repo, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	edit(t, repo, "clusters/dev/kustomization.yaml", "  - sync.yaml\n", "")
	e, err := Load(Options{Repo: repo, Path: "clusters/dev"})
	if err != nil || e.Root != nil {
		t.Fatalf("root %v, err %v", e.Root, err)
	}
}

// TestKustomizationNamesSubstituted: a Kustomization rendered by one that
// substitutes is modelled under the name the controller applies (a
// component's ${APP}-db per app), not the raw text.
func TestKustomizationNamesSubstituted(t *testing.T) {
	t.Parallel()
	repo := copyTree(t, "../../testdata/layouts/operator")
	if err := os.WriteFile(filepath.Join(repo, "kubernetes/apps/default/echo/app/db.yaml"), []byte(`apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ${APP}-db
  namespace: flux-system
spec:
  interval: 1h
  path: ./kubernetes/apps/default/echo-config/app
  prune: true
  sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	e, err := Load(Options{Repo: repo, Path: "kubernetes/flux/cluster"})
	if err != nil {
		t.Fatal(err)
	}
	db := e.Kustomization("default", "echo-db") // echo sets targetNamespace: default
	if db == nil || db.Location.File != "kubernetes/apps/default/echo/app/db.yaml" || db.AppliedBy != "default/echo" || !db.Built {
		t.Fatalf("echo-db: %+v", db)
	}
}

// TestLocateRenamedByBuild: an object whose name the build set (the
// component's Namespace "_", renamed by each namespace's kustomization) is
// located at the one declaration of its kind the build read, not "(file
// unknown)".
func TestLocateRenamedByBuild(t *testing.T) {
	t.Parallel()
	e, err := Load(Options{Repo: "../../testdata/layouts/operator", Path: "kubernetes/flux/cluster"})
	if err != nil {
		t.Fatal(err)
	}
	apps := e.Kustomization("flux-system", "cluster-apps")
	if apps == nil {
		t.Fatal("no cluster-apps")
	}
	if l := e.Locate(apps.Files, "Namespace", "", "default"); l.File != "kubernetes/components/common/namespace.yaml" {
		t.Fatalf("Namespace default: %v", l)
	}
}

// TestLocateByNamespaceTransformer: two Kustomizations of one name, each
// written without a namespace and given one by the kustomization file above
// it (kustomize's namespace transformer), are each located in their own
// file (issue 55 item 7: home/netbox was cited at databases/netbox's line).
func TestLocateByNamespaceTransformer(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	files := map[string]string{
		"clusters/prod/sync.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: flux-system, namespace: flux-system}\nspec: {interval: 1m, url: https://git.example.invalid/r.git, ref: {branch: main}}\n---\n" +
			"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: flux-system, namespace: flux-system}\nspec: {interval: 10m, path: ./clusters/prod, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n---\n" +
			"apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: apps, namespace: flux-system}\nspec: {interval: 10m, path: ./apps, prune: true, sourceRef: {kind: GitRepository, name: flux-system}}\n",
		"apps/databases/kustomization.yaml": "namespace: databases\nresources: [./netbox/ks.yaml]\n",
		"apps/databases/netbox/ks.yaml":     "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: netbox}\nspec: {interval: 10m, path: ./apps/databases/netbox/app, prune: true, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}\n",
		"apps/databases/netbox/app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: netbox-db, namespace: databases}\n",
		"apps/home/kustomization.yaml":      "namespace: home\nresources: [./netbox/ks.yaml]\n",
		"apps/home/netbox/ks.yaml":          "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: netbox}\nspec: {interval: 10m, path: ./apps/home/netbox/app, prune: true, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}\n",
		"apps/home/netbox/app/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: netbox, namespace: home}\n",
	}
	for f, c := range files {
		if err := os.MkdirAll(filepath.Join(repo, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, repo, f, c)
	}
	e, err := Load(Options{Repo: repo, Path: "clusters/prod"})
	if err != nil {
		t.Fatal(err)
	}
	for ns, want := range map[string]string{"home": "apps/home/netbox/ks.yaml", "databases": "apps/databases/netbox/ks.yaml"} {
		k := e.Kustomization(ns, "netbox")
		if k == nil {
			t.Fatalf("no %s/netbox", ns)
		}
		if k.Location.File != want {
			t.Errorf("%s/netbox located at %v, want %s", ns, k.Location, want)
		}
	}
}

// TestLoadArtifactGenerators: Kustomizations reading ExternalArtifacts are
// built from the artifacts the environment's ArtifactGenerators make from
// this repository (testdata/layouts/monorepo), their files mapped back to
// the repository files they were copied from, and the artifacts are
// sources the environment renders.
func TestLoadArtifactGenerators(t *testing.T) {
	t.Parallel()
	e, err := Load(Options{Repo: "../../testdata/layouts/monorepo", Path: "clusters/prod"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, k := range e.Kustomizations {
		got[k.Name] = fmt.Sprintf("%v %s %s", k.Built, k.Via, strings.Join(k.Files, ","))
	}
	want := map[string]string{
		"flux-system":       got["flux-system"],
		"infra-controllers": "true flux-system/platform infrastructure/controllers/apps-namespace.yaml,infrastructure/controllers/ingress/config.yaml,infrastructure/controllers/ingress/namespace.yaml",
		// Merged: both files it came from.
		"app-values": "true flux-system/platform apps/base/values.yaml,apps/prod/values.yaml",
		"podinfo":    "true flux-system/apps apps/podinfo/deployment.yaml",
		"redis":      "true flux-system/apps apps/redis/statefulset.yaml",
	}
	if !maps.Equal(got, want) {
		t.Errorf("Kustomizations %v\nwant %v", got, want)
	}
	// Merge is Helm's: the overlay's logLevel over the base's, region kept.
	cm := e.Kustomization("flux-system", "app-values").Resources[0]
	if d := cm.GetDataMap(); d["logLevel"] != "warn" || d["region"] != "eu-west" {
		t.Errorf("app-values data %v, want logLevel warn over region eu-west", d)
	}
	var eas []string
	for _, s := range e.Sources {
		if s.Ref.Kind == "ExternalArtifact" {
			eas = append(eas, s.Ref.Name+"@"+s.Location.File)
		}
	}
	slices.Sort(eas)
	if w := []string{"app-values@clusters/prod/generators.yaml", "base@clusters/prod/generators.yaml", "infra-controllers@clusters/prod/generators.yaml", "podinfo@clusters/prod/generators.yaml", "prod@clusters/prod/generators.yaml", "redis@clusters/prod/generators.yaml"}; !slices.Equal(eas, w) {
		t.Errorf("ExternalArtifact sources %v, want %v", eas, w)
	}
}

// bomb is a YAML alias bomb (a "billion laughs": level i is ten aliases of
// level i-1).
func bomb() string {
	var b strings.Builder
	b.WriteString("values:\n  l0: &l0 [lol]\n")
	for i := 1; i <= 9; i++ {
		b.WriteString(fmt.Sprintf("  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 10), ", ")))
	}
	return b.String()
}

// TestAliasBombOnlyWhereRead: review item 5 — an alias bomb refuses only
// the build that reads it: none in a file no build reads, a failed
// Kustomization (its error naming the file, the line and why) in one a
// child's path reads, an input error in one the root reads.
func TestAliasBombOnlyWhereRead(t *testing.T) {
	for _, tc := range []struct {
		name, file string
		child      string // the Kustomization failing; "" none
		root       bool   // Load refuses the repository
	}{
		{name: "a file no build reads", file: "clusters/dev/billion-laughs.yaml"},
		{name: "a file a child's path reads", file: "apps/laughs.yaml", child: "flux-system/apps"},
		{name: "a file the root reads", file: "clusters/dev/laughs.yaml", root: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := copyTree(t, clean)
			if err := os.WriteFile(filepath.Join(repo, tc.file), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: laughs\ndata:\n  x: y\nx-"+bomb()), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.root {
				edit(t, repo, "clusters/dev/kustomization.yaml", "  - sync.yaml\n", "  - sync.yaml\n  - laughs.yaml\n")
			}
			e, err := Load(Options{Repo: repo, Path: "clusters/dev", KeepGoing: true})
			want := tc.file + ":17: its aliases expand"
			if tc.root {
				if err == nil || !verify.IsInput(err) || !strings.Contains(err.Error(), want) {
					t.Fatalf("err %v, want an input error with %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("the repository is refused: %v", err)
			}
			for _, k := range e.Kustomizations {
				switch {
				case k.Ref() == tc.child && (k.Err == nil || !strings.Contains(k.Err.Error(), want)):
					t.Errorf("%s: err %v, want %q", k.Ref(), k.Err, want)
				case k.Ref() != tc.child && k.Err != nil:
					t.Errorf("%s failed: %v", k.Ref(), k.Err)
				}
			}
		})
	}
}

// TestLoadHoles (issue 45 items 1, 2): with Holes, a remote entry of the
// root directory is left out (in the copy only) and recorded once with its
// line and the builds reading it, and a root that does not build is
// Env.RootErr, built again without the broken entry; without Holes (sync,
// which applies the root) both stay input errors. The repository itself is
// never changed.
func TestLoadHoles(t *testing.T) {
	t.Parallel()
	repo := copyTree(t, clean)
	const root = "resources:\n- ../base\n- sync.yaml\n- cluster-vars.yaml\n- app-secrets.sops.yaml\n- https://example.invalid/crds.yaml\n- gone.yaml\n"
	write(t, repo, "clusters/dev/kustomization.yaml", root)
	if _, err := Load(Options{Repo: repo, Path: "clusters/dev", KeepGoing: true}); err == nil || !verify.IsInput(err) {
		t.Fatalf("without Holes: err = %v, want an input error", err)
	}
	e, err := Load(Options{Repo: repo, Path: "clusters/dev", KeepGoing: true, Holes: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Holes) != 1 || e.Holes[0].Location.String() != "clusters/dev/kustomization.yaml:6" || !e.Holes[0].Offline || !slices.Equal(e.Holes[0].By, []string{"flux-system/flux-system"}) {
		t.Fatalf("holes: %+v", e.Holes)
	}
	if e.RootErr == nil || !strings.Contains(e.RootErr.Error(), "gone.yaml") || len(e.RootRepaired) != 1 || e.RootRepaired[0].Location.String() != "clusters/dev/kustomization.yaml:7" {
		t.Fatalf("root: err %v, repaired %+v", e.RootErr, e.RootRepaired)
	}
	if apps := e.Kustomization("flux-system", "apps"); apps == nil || !apps.Built || !slices.Equal(apps.OnceFixed, []string{"clusters/dev/kustomization.yaml"}) {
		t.Fatalf("apps: %+v", apps)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "clusters/dev/kustomization.yaml")); string(b) != root {
		t.Fatalf("the repository was changed:\n%s", b)
	}
}
