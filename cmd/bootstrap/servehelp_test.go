package main

import (
	"os"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestServeHelpNamesOCI: --serve's help says what it serves for both root
// kinds (internal/serve: a Git repository, or a Flux OCI artifact,
// OCIHandler), on every command that takes it.
func TestServeHelpNamesOCI(t *testing.T) {
	t.Parallel()
	root := newRootCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, func(string) string { return "" })
	for _, name := range []string{"up", "sync"} {
		c, _, err := root.Find([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		f := c.Flags().Lookup("serve")
		if f == nil {
			t.Fatalf("%s has no --serve", name)
		}
		for _, want := range []string{"GitRepository root", "Flux OCI artifact", "OCIRepository root"} {
			if !strings.Contains(f.Usage, want) {
				t.Errorf("%s --serve help %q does not say %q", name, f.Usage, want)
			}
		}
	}
}
