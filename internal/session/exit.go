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

// The exit codes. They are decided here and nowhere else: libraries return
// typed errors (verify.InputError, pipeline.Interrupted, ...) and reports
// carry verdicts; Code turns them into one of these.
const (
	ExitOK         = 0 // every gate passed (warnings allowed)
	ExitFailed     = 1 // a gate or a phase failed
	ExitInput      = 2 // usage or input error
	ExitIncomplete = 3 // a required gate could not be checked
)

// exitSignal is the code a shell expects of a process a signal stopped:
// 128 + its number (130 for SIGINT, 143 for SIGTERM).
func exitSignal(s syscall.Signal) int { return 128 + int(s) }

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
	{ExitOK, "all gates passed", "every gate passed (warnings allowed)"},
	{ExitFailed, "a gate or phase failed", "a gate or a phase failed"},
	{ExitInput, "usage or input error", "usage or input error (an unknown command or flag, an argument too many or missing, a bad flag value — see [Input rules](docs/input-rules.md) —, unknown version/component, malformed overlay, not a bundle, a file that is not a regular file inside its directory or is too large)"},
	{ExitIncomplete, "incomplete (a required gate could not be checked)", "incomplete: a required gate could not be checked (`skip`) — never a success"},
	{exitSignal(syscall.SIGINT), "interrupted by SIGINT", "interrupted by SIGINT (Ctrl-C): the report says `interrupted by SIGINT`, the phase that was running, how far it got (its checks: nothing of it applied; its apply: part of its plan may be applied, re-run to finish; its proof: applied, re-run to prove) and the phases completed before it"},
	{exitSignal(syscall.SIGTERM), "interrupted by SIGTERM", "interrupted by SIGTERM, reported the same way"},
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

// ExitError carries an exit code Code decided after the command already
// reported (Finish, Fail): Exit does not print it again.
type ExitError struct{ Code int }

func (e *ExitError) Error() string { return fmt.Sprintf("exit %d", e.Code) }

// Code is the exit-code policy, the one place an outcome becomes an exit
// code: err is what stopped the command (nil when it ran to its end), ctx
// the command's context (a signal that cancelled it), r its report (nil
// when it has none), judged by its verdicts when err is nil.
//
//   - an *ExitError: the code it carries (decided here before);
//   - a signal cancelled ctx, or err is a *pipeline.Interrupted or
//     *pipeline.SignalError: 128 + the signal's number, unless err is an
//     input error (the command line was refused before the signal);
//   - an input error (*verify.InputError, which cobra's flag and argument
//     errors are made into): 2;
//   - any other error: 1;
//   - no error: the report's verdicts, a failed (or unknown) verdict 1, a
//     required check skipped 3, otherwise 0; a report that records an
//     error with no kind attached is a refused input, 2.
func Code(ctx context.Context, err error, r *verify.Report) int {
	if err != nil {
		var ee *ExitError
		var ie *pipeline.Interrupted
		var se *pipeline.SignalError
		switch {
		case errors.As(err, &ee):
			return ee.Code
		case verify.IsInput(err):
			return ExitInput
		case errors.As(err, &ie):
			return exitSignal(ie.Signal.Signal)
		case errors.As(err, &se):
			return exitSignal(se.Signal)
		}
		if ctx != nil {
			if s := pipeline.SignalOf(ctx); s != nil {
				return exitSignal(s.Signal)
			}
		}
		return ExitFailed
	}
	if r == nil {
		return ExitOK
	}
	// The report's own verdict, one tally (verify.Tally): a run that
	// stopped with an Error is a failure here too (Fail gives it the
	// error's own code).
	switch r.Verdict() {
	case verify.Fail:
		return ExitFailed
	case verify.Skip:
		return ExitIncomplete
	}
	return ExitOK
}

// ReportCode is Code of a report that ran to its end: its verdicts' code.
func ReportCode(r *verify.Report) int { return Code(context.Background(), nil, r) }

// Exit is the exit code of a command's result err, with ctx the command's
// context (Code). An error not yet reported (not an *ExitError) is printed
// to errOut first, credentials redacted.
func Exit(ctx context.Context, err error, errOut io.Writer) int {
	var ee *ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(errOut, "error:", input.RedactURLs(err.Error()))
	}
	return Code(ctx, err, nil)
}

// WithSignals is signal.NotifyContext that keeps which signal arrived: the
// context is cancelled with a *pipeline.SignalError as its cause, so the
// run reports "interrupted" and exits 130 (SIGINT) or 143 (SIGTERM) (Code). A
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
