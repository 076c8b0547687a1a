package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/fluxcd/pkg/ssa"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// SignalError is the cause a command's context is cancelled with when a
// signal arrives (main.go): which signal (the command's exit code follows
// from it: session.Code).
type SignalError struct {
	Name   string
	Signal syscall.Signal
}

func (e *SignalError) Error() string { return "interrupted by " + e.Name }

// Signal is the SignalError for sig.
func Signal(sig os.Signal) *SignalError {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return &SignalError{Name: sig.String(), Signal: syscall.SIGINT}
	}
	name := map[syscall.Signal]string{syscall.SIGINT: "SIGINT", syscall.SIGTERM: "SIGTERM", syscall.SIGHUP: "SIGHUP"}[s]
	if name == "" {
		name = s.String()
	}
	return &SignalError{Name: name, Signal: s}
}

// Interrupted is the error of a run whose context was cancelled by a
// signal: which phase it stopped in, how far that phase had got, and what
// that means for the cluster.
type Interrupted struct {
	Signal *SignalError
	// Phase is the phase that was running; Stage how far it had got:
	// verify.Before (checks, nothing applied), Do (plan and apply) or
	// verify.After (proving what was applied).
	Phase string
	Stage verify.Stage
	// Done are the phases that had completed.
	Done []string
	// Planned and Changes count the objects in the plans so far and
	// those that change.
	Planned, Changes int
	DryRun           bool
}

func (e *Interrupted) Error() string {
	what := ""
	switch {
	case e.DryRun:
		what = "a dry run: nothing was applied"
	case e.Stage == verify.Before:
		what = "during its checks: nothing of it was applied"
	case e.Stage == Do && e.Planned == 0:
		what = "while changing the cluster: its checks say what was changed; re-run the command to finish"
	case e.Stage == Do:
		what = fmt.Sprintf("while planning or applying: part of its plan may have been applied (%d object(s) planned, %d to change); re-run the command to finish, it applies only what still differs", e.Planned, e.Changes)
	default:
		what = "after its changes were applied, while proving them: re-run the command to prove them"
	}
	done := "no phase had completed"
	if len(e.Done) > 0 {
		done = fmt.Sprintf("completed before it: %v", e.Done)
	}
	return fmt.Sprintf("%s: phase %s interrupted %s; %s", e.Signal.Error(), e.Phase, what, done)
}

// SignalOf returns the signal a context was cancelled by, nil when it was
// not (a timeout, or still running).
func SignalOf(ctx context.Context) *SignalError {
	var s *SignalError
	if errors.As(context.Cause(ctx), &s) {
		return s
	}
	return nil
}

// interrupted wraps what a phase stopped with when its context was
// cancelled by a signal; nil otherwise.
func interrupted(ctx context.Context, run *Run, phase string, stage verify.Stage, done []string) *Interrupted {
	s := SignalOf(ctx)
	if s == nil {
		return nil
	}
	n := 0
	for _, o := range run.Report.Objects {
		if a := o.Action; a != ssa.UnchangedAction && a != ssa.SkippedAction {
			n++
		}
	}
	return &Interrupted{Signal: s, Phase: phase, Stage: stage, Done: done, Planned: len(run.Report.Objects), Changes: n, DryRun: run.DryRun}
}
