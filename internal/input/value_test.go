package input

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

func TestValues(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var (
		d       time.Duration
		n       int
		out, od string
		name    string
		ref     string
		rp      string
		rps     []string
		env     string
	)
	for _, c := range []struct {
		v    pflag.Value
		in   string
		want string // "" accepted, else part of the error
	}{
		{NewDuration(&d, time.Minute), "90s", ""},
		{NewDuration(&d, time.Minute), "0", "must be positive"},
		{NewDuration(&d, time.Minute), "-1s", "must be positive"},
		{NewDuration(&d, time.Minute), "soon", "not a duration"},
		{NewDurationOrZero(&d, time.Minute), "0", ""},
		{NewDurationOrZero(&d, time.Minute), "-1s", "must be positive"},
		{NewCount(&n, 3), "0", ""},
		{NewCount(&n, 3), "-1", "0 or more"},
		{NewOutputFile(&out), filepath.Join(dir, "report.json"), ""},
		{NewOutputFile(&out), "/nonexistent/dir/r.json", "does not exist"},
		{NewOutputFile(&out), dir, "is a directory"},
		{NewFormatFile(&out, func(n string) bool { return strings.HasSuffix(n, ".md") }, ".md"), filepath.Join(dir, "g.png"), "name the file .md"},
		{NewFormatFile(&out, func(n string) bool { return strings.HasSuffix(n, ".md") }, ".md"), filepath.Join(dir, "g.md"), ""},
		{NewOutputFile(&out), filepath.Join(file, "x"), "not a directory"},
		{NewOutputDir(&od), dir, ""},
		{NewOutputDir(&od), file, "not a directory"},
		{NewOutputDir(&od), filepath.Join(dir, "new", "dir"), ""}, // created when missing
		{NewName(&name, "flux-system", "root Kustomization"), "apps", ""},
		{NewName(&name, "flux-system", "root Kustomization"), "Root!", "pass the name of the root Kustomization"},
		{NewRef(&ref, "flux-system/flux-system"), "apps", ""},
		{NewRef(&ref, "flux-system/flux-system"), "flux-system/apps", ""},
		{NewRef(&ref, "flux-system/flux-system"), "flux-system/", "NAMESPACE/NAME"},
		{NewRef(&ref, "flux-system/flux-system"), "a/b/c", "NAMESPACE/NAME"},
		{NewRepoPath(&rp), "clusters/dev", ""},
		{NewRepoPath(&rp), "../../etc", "inside the repository"},
		{NewRepoPath(&rp), "/etc", "inside the repository"},
		{NewRepoPaths(&rps), "clusters/dev,clusters/prod", ""},
		{NewRepoPaths(&rps), "clusters/dev,../x", "inside the repository"},
		{NewEnv(&env), "prod", ""},
		{NewEnv(&env), "../prod", "environment name"},
		{NewEnv(&env), "a/b", "environment name"},
	} {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		fs.Var(c.v, "x", "")
		if err := fs.Set("x", c.in); err != nil {
			t.Fatalf("%s %q: the parse itself must not stop: %v", c.v.Type(), c.in, err)
		}
		err := Check(fs)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %q: refused: %v", c.v.Type(), c.in, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--x") || !verify.IsInput(err)):
			t.Errorf("%s %q: want an input error naming --x with %q, got %v", c.v.Type(), c.in, c.want, err)
		}
	}
}
