package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"io/fs"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/flow"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// gateTablesPage is the hand-written manual whose "fails when" tables say,
// per command, when each gate fires (docs/reference/gates.md is generated
// from the declarations and cannot miss one).
const gateTablesPage = "../../docs/commands.md"

// TestDocsListEveryGate fails when a gate is declared but the commands
// manual's gate tables do not name it.
func TestDocsListEveryGate(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(gateTablesPage)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	seen := map[string]bool{}
	for _, p := range flow.Every() {
		for _, d := range p.Gates() {
			if seen[d.ID] {
				continue
			}
			seen[d.ID] = true
			want := "`" + d.ID
			if d.Prefix {
				want += "/"
			} else {
				want += "`"
			}
			if !strings.Contains(page, want) {
				t.Errorf("docs/commands.md does not list gate %s (%s, %s/%s): add it to the phase's gate table", d.ID, d.Title, d.Phase, d.Stage)
			}
		}
	}
	if len(seen) < 20 {
		t.Fatalf("only %d gates found: the phase list is incomplete", len(seen))
	}
}

// TestGateIDsUnique fails when two gates of different phases share an ID.
func TestGateIDsUnique(t *testing.T) {
	t.Parallel()
	owner := map[string]verify.Def{}
	for _, p := range flow.Every() {
		for _, d := range p.Gates() {
			if o, ok := owner[d.ID]; ok && o.Phase != d.Phase {
				t.Errorf("gate %s declared by phases %s and %s", d.ID, o.Phase, d.Phase)
			}
			owner[d.ID] = d
		}
	}
}

// TestDocsInputRules fails when a flag with an input rule is missing from
// the input rules page, or the README's exit-code table lacks the
// interrupt codes.
func TestDocsInputRules(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../docs/input-rules.md")
	if err != nil {
		t.Fatal(err)
	}
	rules := string(b)
	for _, flag := range []string{"--namespace", "--secret-name", "--source-secret", "--source`", "--root", "--image-pull-secret",
		"--cluster-domain", "--registry", "--toleration-keys", "--timeout", "--source-url", "--to`", "--components", "--output-dir",
		"--manifests", "--overlays", "--repo", "--kubeconfig", "--age-key-file"} {
		if !strings.Contains(rules, flag) {
			t.Errorf("docs/input-rules.md does not mention %s", strings.TrimSuffix(flag, "`"))
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, codes, ok := strings.Cut(string(readme), "## Exit codes")
	if !ok {
		t.Fatal(`README.md has no "## Exit codes" section`)
	}
	for _, code := range []string{"| 0 |", "| 1 |", "| 2 |", "| 3 |", "| 130 |", "| 143 |"} {
		if !strings.Contains(codes, code) {
			t.Errorf("README.md's exit-code table lacks %s", code)
		}
	}
}

// TestReferenceUpToDate fails when the committed reference (docs/reference)
// differs from what the code generates, as flux2 does for its docs/cmd.
func TestReferenceUpToDate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := runCLI(t, "docgen", "--dir", dir)
	if r.code != 0 {
		t.Fatalf("docgen: exit %d\n%s", r.code, r.stderr)
	}
	want := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		want[rel] = true
		gen, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		committed, err := os.ReadFile(filepath.Join("../../docs/reference", rel))
		if err != nil || string(committed) != string(gen) {
			t.Errorf("docs/reference/%s is not what the code generates: run `make docs` and commit it", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = filepath.WalkDir("../../docs/reference", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel("../../docs/reference", p)
			if !want[rel] && strings.HasSuffix(rel, ".md") && rel != "README.md" {
				t.Errorf("docs/reference/%s is not generated any more: run `make docs` (it removes it)", rel)
			}
		}
		return nil
	})
	if !want["gates.md"] || !want[filepath.Join("cmd", "bootstrap_up.md")] || !want[filepath.Join("cmd", "bootstrap_serve_status.md")] {
		t.Fatalf("the reference lacks pages: %v", want)
	}
}

// TestUsageLines: pflag takes a back-quoted word in a usage string as the
// value's name ("--check bootstrap check"); no flag's usage may have one.
func TestUsageLines(t *testing.T) {
	t.Parallel()
	root := newRootCommand(genericiooptions.NewTestIOStreamsDiscard(), func(string) string { return "" })
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				t.Errorf("%s --%s: usage %q has a back-quote (pflag makes it the value's name)", c.CommandPath(), f.Name, f.Usage)
			}
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// TestReadmeExitCodes holds the README's exit-code table to the one in
// code (session.ExitCodes), which the root command's help is made from.
func TestReadmeExitCodes(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "## Exit codes\n")
	if want := session.ExitCodesMarkdown(); !strings.Contains(section, "\n"+want) {
		t.Errorf("README.md's exit-code table is not session.ExitCodes; want:\n%s", want)
	}
}
