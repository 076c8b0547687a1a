package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/homelab-ops/bootstrap/internal/input"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// ExitCode is one row of the exit-code table.
type ExitCode struct {
	Code int
	// Short is the meaning in the command's help; Meaning the README's.
	Short, Meaning string
}

// ExitCodes is the exit-code table, written once: the help of the root
// command and the README's "Exit codes" table are made from it (a test
// holds the README to it).
var ExitCodes = []ExitCode{
	{verify.ExitOK, "all gates passed", "every gate passed (warnings allowed)"},
	{verify.ExitFailed, "a gate or phase failed", "a gate or a phase failed"},
	{verify.ExitInput, "usage or input error", "usage or input error (bad flag value — see [Input rules](docs/input-rules.md) —, unknown version/component, malformed overlay, not a bundle, a file that is not a regular file inside its directory or is too large)"},
	{verify.ExitIncomplete, "incomplete (a required gate could not be checked)", "incomplete: a required gate could not be checked (`skip`) — never a success"},
	{128 + int(syscall.SIGINT), "interrupted by SIGINT", "interrupted by SIGINT (Ctrl-C): the report says `interrupted by SIGINT`, the phase that was running, how far it got (its checks: nothing of it applied; its apply: part of its plan may be applied, re-run to finish; its proof: applied, re-run to prove) and the phases completed before it"},
	{128 + int(syscall.SIGTERM), "interrupted by SIGTERM", "interrupted by SIGTERM, reported the same way"},
}

// ExitCodesHelp is the table as one sentence, for a command's help.
func ExitCodesHelp() string {
	parts := make([]string, len(ExitCodes))
	for i, c := range ExitCodes {
		parts[i] = strconv.Itoa(c.Code) + " " + c.Short
	}
	return "Exit codes: " + strings.Join(parts, ", ") + "."
}

// ExitCodesMarkdown is the table as the README shows it.
func ExitCodesMarkdown() string {
	var b strings.Builder
	b.WriteString("| code | meaning |\n|---|---|\n")
	for _, c := range ExitCodes {
		fmt.Fprintf(&b, "| %d | %s |\n", c.Code, c.Meaning)
	}
	return b.String()
}

// UsageError marks a command-line mistake (exit 2).
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }

// ExitError carries an exit code after the command already reported.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// Code is the exit-code policy: the code of a command's result err, with
// ctx the command's context. An error not yet reported is printed to
// errOut (credentials redacted) first.
func Code(ctx context.Context, err error, errOut io.Writer) int {
	if err == nil {
		return verify.ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	fmt.Fprintln(errOut, "error:", input.RedactURLs(err.Error()))
	var ue *UsageError
	if errors.As(err, &ue) {
		return verify.ExitInput
	}
	if s := pipeline.SignalOf(ctx); s != nil && !verify.IsInput(err) {
		return s.Code
	}
	return pipeline.ExitCode(err)
}

// WithSignals is signal.NotifyContext that keeps which signal arrived: the
// context is cancelled with a *pipeline.SignalError as its cause, so the
// run reports "interrupted" and exits 130 (SIGINT) or 143 (SIGTERM). A
// second signal gets the default behaviour: the process dies at once.
func WithSignals(parent context.Context, sigs ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			cancel(pipeline.Signal(s))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}
