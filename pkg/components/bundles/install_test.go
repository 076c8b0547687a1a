package bundles

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/homelab-ops/bootstrap/internal/installtest"
)

const modulePath = "github.com/homelab-ops/bootstrap"

// TestGoInstallRendersAndChecks: `go install <module>/cmd/bootstrap@<version>`
// gives a binary that embeds the Flux releases, renders and checks — with no
// generate step, because the bundles are committed. The module is served as
// the Go module proxy would serve it: a zip of this repository at HEAD made
// with x/mod/zip.CreateFromVCS (git archive, as the proxy does) in a file://
// GOPROXY listed first, dependencies from this machine's module cache or the
// configured proxy. The install runs outside any module into a temporary
// GOBIN, so nothing of this working tree is used.
func TestGoInstallRendersAndChecks(t *testing.T) {
	installtest.Require(t, "git", "go")
	tmp := t.TempDir()
	src := installtest.CloneHEAD(t, filepath.Join(tmp, "src"))

	// A pseudo-version from the commit, as `go get @<commit>` would name it.
	commitTime, err := time.Parse(time.RFC3339, installtest.Git(t, src, nil, "log", "-1", "--format=%cI"))
	if err != nil {
		t.Fatal(err)
	}
	rev := installtest.Git(t, src, nil, "rev-parse", "HEAD")
	version := module.PseudoVersion("v0", "", commitTime.UTC(), rev[:12])
	proxy := filepath.Join(tmp, "proxy")
	serveModule(t, proxy, src, module.Version{Path: modulePath, Version: version}, commitTime)

	gobin := filepath.Join(tmp, "bin")
	env := installtest.GoEnv(t)
	for i, kv := range env {
		if strings.HasPrefix(kv, "GOPROXY=") { // ours first
			env[i] = "GOPROXY=file://" + filepath.ToSlash(proxy) + "," + strings.TrimPrefix(kv, "GOPROXY=")
		}
	}
	// Our pseudo-version is in no checksum database; the dependencies still are checked.
	env = append(env, "GOBIN="+gobin, "GONOSUMDB="+modulePath)
	start := time.Now()
	install := exec.Command("go", "install", modulePath+"/cmd/bootstrap@"+version)
	install.Dir, install.Env = tmp, env // outside any module
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("go install %s/cmd/bootstrap@%s: %v\n%s", modulePath, version, err, out)
	}
	t.Logf("go install %s/cmd/bootstrap@%s: %s", modulePath, version, time.Since(start).Round(time.Second))
	bin := filepath.Join(gobin, "bootstrap")

	runEnv := append(os.Environ(), "HOME="+tmp, "KUBECONFIG="+filepath.Join(tmp, "none"))
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"version: the module version and the embedded releases", []string{"version"}, []string{version, "v2.2.3", "v2.9.5"}},
		{"render", []string{"render"}, []string{"kind: Deployment", "name: kustomize-controller", "--feature-gates"}},
		{"render an older embedded release", []string{"render", "--flux-version", "v2.4.0"}, []string{"kustomize-controller:v1.4.0"}},
		{"check the homelab fixture", []string{"check", "--repo", filepath.Join(src, "testdata", "homelab")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(bin, tt.args...)
			cmd.Dir, cmd.Env = tmp, runEnv
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("bootstrap %v: %v\nstdout:\n%.2000s\nstderr:\n%s", tt.args, err, stdout.String(), stderr.String())
			}
			for _, s := range tt.want {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("bootstrap %v: stdout lacks %q:\n%.2000s", tt.args, s, stdout.String())
				}
			}
		})
	}
}

// TestExamplesBuildInFreshClone: examples/ (programs using the public
// packages) build in a fresh `git clone` with no generate step: the bundles
// they embed are committed.
func TestExamplesBuildInFreshClone(t *testing.T) {
	// Not gated: with this machine's build cache only our own packages
	// compile (seconds), so every make test proves it.
	for _, tool := range []string{"git", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed: %v", tool, err)
		}
	}
	src := installtest.CloneHEAD(t, filepath.Join(t.TempDir(), "src"))
	if _, err := os.Stat(filepath.Join(src, "pkg", "components", "bundles", "flux", ".stamp")); err != nil {
		t.Fatalf("a fresh clone lacks the committed bundles: %v", err)
	}
	cmd := exec.Command("go", "build", "-o", os.DevNull, "./examples/...")
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./examples/... in a fresh clone: %v\n%s", err, out)
	}
}

// serveModule writes m as a file:// GOPROXY serves it: list, .info, .mod
// and a zip made from the git repository src at HEAD.
func serveModule(t *testing.T, proxy, src string, m module.Version, at time.Time) {
	t.Helper()
	esc, err := module.EscapePath(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	zf, err := os.Create(filepath.Join(dir, m.Version+".zip"))
	if err != nil {
		t.Fatal(err)
	}
	if err := modzip.CreateFromVCS(zf, m, src, "HEAD", ""); err != nil {
		zf.Close()
		t.Fatalf("module zip of %s: %v", src, err)
	}
	if err := zf.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(zf.Name()); err == nil {
		t.Logf("module zip: %.1f MiB", float64(fi.Size())/(1<<20))
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, at.UTC()})
	if err != nil {
		t.Fatal(err)
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"list": []byte(m.Version + "\n"), m.Version + ".info": info, m.Version + ".mod": gomod} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
