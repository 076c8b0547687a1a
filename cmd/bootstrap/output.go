package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/homelab-ops/bootstrap/internal/diff"
	"github.com/homelab-ops/bootstrap/internal/session"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// The command line's output and exit codes, in one place: which --output
// formats a command writes, how a run's error becomes its exit code and
// last words on stderr (session.Exit: the one table, session.ExitCodes),
// and the exit code of a command that writes no report (diff).

// outputFormatsAnnotation names, on a command, the --output formats it
// writes besides text and json, comma-separated (diff: "markdown").
const outputFormatsAnnotation = "bootstrap/output-formats"

// outputFormats is what --output takes for cmd, for its error message.
func outputFormats(cmd *cobra.Command) string {
	fs := []string{"text", "json"}
	if more := cmd.Annotations[outputFormatsAnnotation]; more != "" {
		fs = append(fs, strings.Split(more, ",")...)
	}
	return strings.Join(fs[:len(fs)-1], ", ") + " or " + fs[len(fs)-1]
}

// checkOutput refuses an --output cmd does not write and --quiet with
// --verbose.
func (a *app) checkOutput(cmd *cobra.Command) error {
	if f := a.s.Output.Format; f != "text" && f != "json" {
		// A command may write more formats (diff: markdown).
		if more := cmd.Annotations[outputFormatsAnnotation]; more == "" || !slices.Contains(strings.Split(more, ","), f) {
			return &verify.InputError{Err: fmt.Errorf("--output %q: want %s", f, outputFormats(cmd))}
		}
	}
	if a.s.Output.Quiet && a.s.Output.Verbose {
		return &verify.InputError{Err: fmt.Errorf("--quiet and --verbose are exclusive: pick one")}
	}
	return nil
}

// exit is the exit code of a run that returned err (session.Exit, which
// also writes an error no report carried to stderr).
func (a *app) exit(ctx context.Context, err error) int {
	return session.Exit(ctx, a.commandLineError(err), a.streams.ErrOut)
}

// commandLineError types an error cobra returned before the command's
// hooks ran as an input error: cobra refused the command line itself (an
// unknown command, an argument too many or missing: cobra.NoArgs,
// cobra.ExactArgs, its subcommand lookup), which it returns as plain
// errors. Flag errors are typed already (SetFlagErrorFunc).
func (a *app) commandLineError(err error) error {
	if err == nil || a.started || verify.IsInput(err) {
		return err
	}
	return &verify.InputError{Err: err}
}

// diffExitCode is diff's exit code (docs/diff.md "Exit codes"): 1 when a
// Kustomization or a cluster's root fails at head; with --exit-code, 1
// when anything differs (a failure is a difference), as git diff.
func diffExitCode(res *diff.Result, exitCode bool) int {
	if res.Failed() || (exitCode && res.Changed()) {
		return session.ExitFailed
	}
	return session.ExitOK
}
