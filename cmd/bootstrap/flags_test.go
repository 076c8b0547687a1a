package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// badValues is a value each kind of flag must refuse when it is parsed.
var badValues = map[string]string{
	"duration":         "-1s",
	"int":              "-1",
	"FILE":             "/nonexistent/dir/out.md",
	"DIR":              "/dev/null", // not a directory (a missing one is created)
	"NAME":             "Not_A_Name",
	"[NAMESPACE/]NAME": "a/b/c",
	"ADDR":             "[::1",
	"PATH":             "../../../../etc",
	"PATHS":            "clusters/dev,../../../../etc",
	"ENV":              "../../etc",
	"NAMESPACE":        "Bad_NS!",
	"DOMAIN":           "cluster..local",
	"REGISTRY":         "ghcr.io/fluxcd:v1",
	"URL":              "file:///etc",
	"KEYS":             "ok-key,bad key!",
}

// TestEveryFlagValidatesItself walks every command and every flag whose
// type has a rule, gives it a bad value and wants exit 2 naming the flag,
// before any request (there is no kubeconfig).
func TestEveryFlagValidatesItself(t *testing.T) {
	t.Parallel()
	root := newRootCommand(genericiooptions.NewTestIOStreamsDiscard(), func(string) string { return "" })
	checked := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		if c.Runnable() && !c.Hidden {
			seen := map[string]bool{}
			visit := func(f *pflag.Flag) {
				bad, ok := badValues[f.Value.Type()]
				if !ok || seen[f.Name] {
					return
				}
				seen[f.Name] = true
				checked++
				args := append(append([]string{}, path...), "--"+f.Name+"="+bad)
				r := runCLI(t, args...)
				if r.code != 2 || !strings.Contains(r.stderr, "--"+f.Name) {
					t.Errorf("bootstrap %s: exit %d, want 2 naming --%s:\n%s", strings.Join(args, " "), r.code, f.Name, r.stderr)
				}
			}
			c.LocalFlags().VisitAll(visit)
			c.InheritedFlags().VisitAll(visit)
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	if checked < 25 {
		t.Fatalf("only %d flag values checked: the walk missed commands", checked)
	}
}
