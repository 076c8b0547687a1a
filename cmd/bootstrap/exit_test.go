package main

import (
	"strings"
	"testing"
)

// TestCommandLineRefusedIsExit2: cobra's own refusals of the command line
// (a flag it does not know, an argument a command does not take, one it
// needs, a command that does not exist) are usage errors, exit 2 like any
// other input error (session.Code), not 1. cobra returns the argument
// errors (cobra.NoArgs, cobra.ExactArgs, its subcommand lookup: cobra
// v1.10.2 args.go, command.go Find) as plain errors before the command's
// hooks run; commandLineError types them.
func TestCommandLineRefusedIsExit2(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		args   []string
		stderr string
	}{
		{"unknown flag", []string{"versions", "--no-such-flag"}, "unknown flag: --no-such-flag"},
		{"extra argument", []string{"versions", "extra"}, `unknown command "extra" for "bootstrap versions"`},
		{"extra argument to a subcommand", []string{"serve", "status", "extra"}, `unknown command "extra"`},
		{"missing argument", []string{"serve", "run"}, "accepts 1 arg(s), received 0"},
		{"unknown command", []string{"no-such-command"}, `unknown command "no-such-command" for "bootstrap"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runCLI(t, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.stderr) {
				t.Fatalf("exit %d, want 2 saying %q:\n%s", r.code, tc.stderr, r.stderr)
			}
		})
	}
	// Not a refusal: the same command line, correct, runs (exit 0).
	if r := runCLI(t, "versions"); r.code != 0 {
		t.Fatalf("versions: exit %d\n%s", r.code, r.stderr)
	}
}
