package pipeline

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// interrupting is a phase that receives a signal while it applies: it
// cancels the run's context with the signal as cause, as main.go does.
type interrupting struct {
	fake
	cancel context.CancelCauseFunc
	sig    syscall.Signal
	// asGate makes the phase turn the cancelled wait into a failing gate
	// instead of an error, as the waits do.
	asGate bool
}

func (p *interrupting) Do(ctx context.Context, run *Run) error {
	run.Planned([]verify.ObjectChange{{Object: "Deployment/flux-system/a", Action: "configured"}, {Object: "Namespace/flux-system", Action: "unchanged"}})
	p.cancel(Signal(p.sig))
	if p.asGate {
		run.Report.Add(verify.Def{ID: p.name + ".wait", Phase: p.name, Stage: verify.Before}.Fail("did not become Ready: " + ctx.Err().Error()))
		return nil
	}
	return ctx.Err()
}

func TestInterrupted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sig    syscall.Signal
		asGate bool
		code   int
	}{
		{"SIGINT while applying", syscall.SIGINT, false, 130},
		{"SIGTERM while applying", syscall.SIGTERM, false, 143},
		{"SIGINT turned into a failed wait", syscall.SIGINT, true, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			first := &fake{name: "render"}
			second := &interrupting{fake: fake{name: "apply"}, cancel: cancel, sig: tc.sig, asGate: tc.asGate}
			third := &fake{name: "prove"}
			run := &Run{Report: verify.NewReport("test")}
			err := Execute(ctx, run, first, second, third)
			var ie *Interrupted
			if !errors.As(err, &ie) {
				t.Fatalf("err = %v, want *Interrupted", err)
			}
			// The exit code (128 + the signal) is session.Code's: TestCode.
			if 128+int(ie.Signal.Signal) != tc.code || ie.Phase != "apply" || ie.Stage != "do" || len(ie.Done) != 1 || ie.Done[0] != "render" {
				t.Errorf("signal %v, %+v; want exit %d in phase apply, stage do, after render", ie.Signal, ie, tc.code)
			}
			msg := err.Error()
			for _, w := range []string{"interrupted by SIG", "phase apply interrupted while planning or applying", "1 to change", "re-run the command", "completed before it: [render]"} {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
			if third.did {
				t.Error("a phase after the interrupt ran")
			}
			if !strings.Contains(verdicts(run.Report), "prove.b=skip") {
				t.Errorf("the phases not run are not listed: %s", verdicts(run.Report))
			}
		})
	}
	// A context cancelled without a signal (a timeout) is no interrupt.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if SignalOf(ctx) != nil {
		t.Error("a plain cancel taken for a signal")
	}
	// A failure's exit code (1) and an input error's (2) are session.Code's:
	// TestCode there.
}
