// Package pkg_test guards the public packages: what a program outside this
// module imports must not drag in the command line.
package pkg_test

import (
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/homelab-ops/bootstrap/"

// listed is the part of `go list -deps -json` the guard reads.
type listed struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

// violations lists, for every package matched by patterns that is in this
// module and under a root, the imports a public package must not have:
// anything under internal/ (so nothing of this module's internals, the
// flag package internal/input included) even transitively, cobra and pflag
// directly.
func violations(t *testing.T, roots []string, patterns ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json"}, patterns...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", patterns, err, stderr.String())
	}
	var bad []string
	d := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := d.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(roots, func(r string) bool { return p.ImportPath == module+r || strings.HasPrefix(p.ImportPath, module+r+"/") }) {
			continue
		}
		for _, d := range p.Deps {
			if strings.HasPrefix(d, module+"internal/") {
				bad = append(bad, p.ImportPath+" imports "+strings.TrimPrefix(d, module)+" (transitively)")
			}
		}
		for _, i := range p.Imports {
			if i == "github.com/spf13/cobra" || i == "github.com/spf13/pflag" {
				bad = append(bad, p.ImportPath+" imports "+i)
			}
		}
	}
	return bad
}

// TestPublicPackagesStayOffTheCommandLine: pkg/... and examples/... import
// nothing under internal/ (the flag package internal/input included) and
// neither cobra nor pflag.
func TestPublicPackagesStayOffTheCommandLine(t *testing.T) {
	if bad := violations(t, []string{"pkg", "examples"}, "../pkg/...", "../examples/..."); len(bad) > 0 {
		t.Errorf("public packages import the command line:\n%s", strings.Join(bad, "\n"))
	}
}

// TestGuardCatchesTheCLI: the guard, run on cmd/bootstrap, reports its
// cobra, pflag and internal/ imports (internal/input and internal/customize
// among them).
func TestGuardCatchesTheCLI(t *testing.T) {
	bad := violations(t, []string{"cmd/bootstrap"}, "../cmd/bootstrap")
	for _, want := range []string{"imports internal/input", "imports internal/customize", "imports github.com/spf13/cobra", "imports github.com/spf13/pflag"} {
		if !slices.ContainsFunc(bad, func(b string) bool { return strings.Contains(b, want) }) {
			t.Errorf("the guard misses %q on cmd/bootstrap: %v", want, bad)
		}
	}
}

// TestExamplesImportOnlyPkg: the example programs use the public API only.
func TestExamplesImportOnlyPkg(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "../examples/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, i := range f[1:] {
			if strings.HasPrefix(i, module) && !strings.HasPrefix(i, module+"pkg/") {
				t.Errorf("%s imports %s: an example may import only pkg/...", f[0], i)
			}
		}
	}
}
