package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestModuleRepo(t *testing.T) {
	for _, tc := range []struct {
		module, repo, subdir string
		ok                   bool
	}{
		{"github.com/fluxcd/kustomize-controller", "fluxcd/kustomize-controller", "", true},
		{"github.com/fluxcd/source-watcher/v2", "fluxcd/source-watcher", "", true},
		{"github.com/fluxcd/pkg/runtime", "fluxcd/pkg", "runtime", true},
		{"github.com/fluxcd/pkg/auth", "fluxcd/pkg", "auth", true},
		{"github.com/fluxcd/pkg/foo/v3", "fluxcd/pkg", "foo", true},
		{"github.com/fluxcd/pkg/v1", "fluxcd/pkg", "v1", true}, // v1 is no major suffix
		{"sigs.k8s.io/kustomize/api", "", "", false},
		{"github.com/fluxcd", "", "", false},
	} {
		repo, subdir, ok := moduleRepo(tc.module)
		if repo != tc.repo || subdir != tc.subdir || ok != tc.ok {
			t.Errorf("moduleRepo(%s) = %q %q %t, want %q %q %t", tc.module, repo, subdir, ok, tc.repo, tc.subdir, tc.ok)
		}
	}
}

// gitRun runs git in dir with a fixed identity, failing the test on error.
func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGitMirror: a controller version and the helper package its init calls
// are read at their tags of git clones in the mirrors directory (our own
// fixture repositories, shaped like a Flux controller and fluxcd/pkg: the
// helper module lives in a subdirectory and is tagged helper/vX.Y.Z). A
// version with no tag is not found there (the proxy is asked instead), and
// the gates follow the tag, not the newest commit.
func TestGitMirror(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	mirrors := t.TempDir()

	pkgRepo := filepath.Join(mirrors, "example+pkg", "repo")
	gitRun(t, mirrors, "init", "-q", pkgRepo)
	writeFiles(t, pkgRepo, map[string]string{
		"helper/go.mod": "module github.com/example/pkg/helper\n\ngo 1.22\n",
		"helper/helper.go": `package helper

const FeatureGateShared = "Shared"

func SetFeatureGates(m map[string]bool) {
	m[FeatureGateShared] = false
}
`,
	})
	gitRun(t, pkgRepo, "add", ".")
	gitRun(t, pkgRepo, "commit", "-q", "-m", "helper")
	gitRun(t, pkgRepo, "tag", "helper/v0.3.0")

	ctl := filepath.Join(mirrors, "example+ctl", "repo")
	gitRun(t, mirrors, "init", "-q", ctl)
	features := func(strictDefault string) string {
		return `package features

import "github.com/example/pkg/helper"

const Strict = "Strict"

var features = map[string]bool{
	Strict: ` + strictDefault + `,
}

func init() {
	helper.SetFeatureGates(features)
}
`
	}
	writeFiles(t, ctl, map[string]string{
		"go.mod":                        "module github.com/example/ctl\n\ngo 1.22\n\nrequire github.com/example/pkg/helper v0.3.0\n\nreplace github.com/example/ctl/api => ./api\n",
		"internal/features/features.go": features("false"),
		// A nested module, left out as a module zip leaves it out.
		"api/go.mod":  "module github.com/example/ctl/api\n",
		"api/api.go":  "package api\n",
		"main.go":     "package main\n",
		"README.md":   "not Go\n",
		"x/x_test.go": "package x\n",
	})
	gitRun(t, ctl, "add", ".")
	gitRun(t, ctl, "commit", "-q", "-m", "v1.0.0")
	gitRun(t, ctl, "tag", "-a", "-m", "v1.0.0", "v1.0.0")
	writeFiles(t, ctl, map[string]string{"internal/features/features.go": features("true")})
	gitRun(t, ctl, "commit", "-q", "-am", "v1.1.0")
	gitRun(t, ctl, "tag", "v1.1.0")

	mc := &modCache{work: t.TempDir(), mirrors: mirrors, dirs: map[string]string{}, pkgs: map[string]*pkg{},
		fromGit: map[string]bool{}, gitDirs: map[string]string{}}
	for _, tc := range []struct {
		version string
		want    map[string]bool
	}{
		{"v1.0.0", map[string]bool{"Strict": false, "Shared": false}},
		{"v1.1.0", map[string]bool{"Strict": true, "Shared": false}},
	} {
		t.Run(tc.version, func(t *testing.T) {
			mv := "github.com/example/ctl@" + tc.version
			if err := mc.download(mv); err != nil {
				t.Fatal(err)
			}
			dir := mc.dirs[mv]
			if dir == "" || !mc.fromGit[mv] {
				t.Fatalf("%s not read from the mirror: %s", mv, mc.errs[mv])
			}
			for _, absent := range []string{"api/api.go", "README.md", "x/x_test.go"} {
				if _, err := os.Stat(filepath.Join(dir, absent)); err == nil {
					t.Errorf("%s extracted; a module zip has no such file", absent)
				}
			}
			r, err := resolve(mc, pair{"ctl", tc.version}, dir)
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(r.gates, tc.want) {
				t.Errorf("gates %v, want %v", r.gates, tc.want)
			}
			if !mc.fromGit["github.com/example/pkg/helper@v0.3.0"] {
				t.Error("the helper module was not read at its helper/v0.3.0 tag")
			}
		})
	}

	// Negative: no tag, no clone, a go.mod naming another module.
	for _, tc := range []struct{ mv, why string }{
		{"github.com/example/ctl@v1.2.0", "no v1.2.0 in"},
		{"github.com/example/other@v1.0.0", "no git clone of example/other"},
		{"github.com/example/ctl/v2@v2.0.0", "no v2.0.0 in"},
	} {
		dir, why, err := mc.gitModule(tc.mv)
		if err != nil || dir != "" || !strings.Contains(why, tc.why) {
			t.Errorf("gitModule(%s) = %q, %q, %v; want no directory and a reason containing %q", tc.mv, dir, why, err, tc.why)
		}
	}
	gitRun(t, ctl, "tag", "v2.0.0")
	if dir, why, err := mc.gitModule("github.com/example/ctl/v2@v2.0.0"); err != nil || dir != "" || !strings.Contains(why, `go.mod names module "github.com/example/ctl"`) {
		t.Errorf("a tag whose go.mod names another module: %q, %q, %v", dir, why, err)
	}
}

// TestNoFeaturesStatus: a version without internal/features is `none` only
// when main.go has no --feature-gates flag, `unchecked` when it binds the
// flag but never declares supported features (fluxcd/pkg/runtime v0.85.0
// runtime/features/features.go: only SupportedFeatures refuses a name;
// source-watcher v2.0.1 cmd/main.go calls featureGates.BindFlags and nothing
// else), and an error when it declares them elsewhere.
func TestNoFeaturesStatus(t *testing.T) {
	const imp = "import gotkfeatures \"github.com/fluxcd/pkg/runtime/features\"\n"
	for _, tc := range []struct {
		name, file, main string
		want, err        string
	}{
		{"no flag", "main.go", "package main\n\nfunc main() {}\n", "none", ""},
		{"binds the flag only", "cmd/main.go", "package main\n\n" + imp + "\nfunc main() {\n\tvar fg gotkfeatures.FeatureGates\n\tfg.BindFlags(nil)\n}\n", "unchecked", ""},
		{"declares supported features", "main.go", "package main\n\n" + imp + "\nfunc main() {\n\tvar fg gotkfeatures.FeatureGates\n\tfg.BindFlags(nil)\n\t_ = fg.SupportedFeatures(nil)\n}\n", "", "declares supported features"},
		{"names the flag by hand", "main.go", "package main\n\nconst f = \"feature-gates\"\n", "", "mentions feature gates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{tc.file: tc.main})
			got, err := noFeaturesStatus(dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want an error containing %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestDefaultOutIsTheEmbeddedTable: the file gengates writes by default is
// the one pkg/patches embeds (//go:embed gatedefaults.txt), so a
// regenerated table lands where the tool reads it.
func TestDefaultOutIsTheEmbeddedTable(t *testing.T) {
	if _, err := os.Stat(filepath.Join("..", "..", defaultOut)); err != nil {
		t.Fatalf("-out default %s: %v", defaultOut, err)
	}
	src, err := os.ReadFile(filepath.Join("..", "..", filepath.Dir(defaultOut), "gatetable.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "//go:embed "+filepath.Base(defaultOut)) {
		t.Errorf("%s/gatetable.go does not embed %s", filepath.Dir(defaultOut), filepath.Base(defaultOut))
	}
}
