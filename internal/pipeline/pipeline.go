// Package pipeline runs phases. A phase is data: its declared gates, the
// gates before it, its work, and the gates after it. One runner executes an
// ordered list of phases with one stop rule: a failed or incomplete required
// before-gate stops that phase and every later one, a failed phase stops the
// later ones, and every gate that did not run is reported as skip with the
// reason, never dropped. Commands only build the list.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// Phase is one step of a bring-up.
type Phase interface {
	// Name is the phase's name in reports ("controllers", "sync" …).
	Name() string
	// Gates declares every gate the phase may report.
	Gates() []verify.Def
	// Before checks what must hold before anything is changed. An error
	// that is not a gate result (bad input, no cluster) stops the pipeline.
	Before(ctx context.Context, run *Run) ([]verify.Check, error)
	// Do does the phase's work: plan, then (unless a dry run) apply. Checks
	// it makes on the way go to run.Report. An error that is not a gate
	// result (input error, a broken connection) stops the pipeline.
	Do(ctx context.Context, run *Run) error
	// After proves the phase landed. Not called on a dry run.
	After(ctx context.Context, run *Run) []verify.Check
}

// Run is what the phases share: the report they write into, whether this is
// a dry run, and where progress goes.
type Run struct {
	Report *verify.Report
	DryRun bool
	// Progress receives one line per step a person may want to follow.
	Progress func(line string)
	// BeforeWrite, when set, runs once before the first phase's work on a
	// run that is not a dry run (the cluster lock is taken there: after
	// the before-gates, before the first write).
	BeforeWrite func(ctx context.Context) error
	wrote       bool
	// OnPhase and OnPhaseDone, when set, hear of each phase starting and
	// ending (with its verdict; skip for a phase that did not run).
	OnPhase     func(name string)
	OnPhaseDone func(name string, verdict verify.Verdict, took time.Duration)
	// OnPlan, when set, receives each phase's plan before it is applied.
	OnPlan func(plan []verify.ObjectChange)
	// Now is the clock (tests set it).
	Now func() time.Time
	// KeepGoing runs every phase of a read-only run: a phase that reached
	// its after-gates does not stop the next one, whatever they found (a
	// before-gate that blocks, or an error, still stops the run).
	KeepGoing bool
	// Reword, when set, says an error that stops the run in the program's
	// words (the command line's flags for a library's typed refusal) for
	// the reason the gates that did not run give.
	Reword func(error) error
	// staged is what the phases before planned to apply in this run
	// (Stage), for the later phases of a dry run to plan against.
	staged []*unstructured.Unstructured
}

// reword is err in the program's words (Reword).
func (r *Run) reword(err error) error {
	if r.Reword == nil {
		return err
	}
	return r.Reword(err)
}

// Planned records a phase's plan in the report and shows it.
func (r *Run) Planned(plan []verify.ObjectChange) {
	r.Report.Objects = append(r.Report.Objects, plan...)
	r.Report.Changed = r.Report.Changed || verify.Changed(plan)
	if r.OnPlan != nil {
		r.OnPlan(plan)
	}
}

// Progressf formats a progress line.
func (r *Run) Progressf(format string, a ...any) {
	if r.Progress != nil {
		r.Progress(fmt.Sprintf(format, a...))
	}
}

// Do is the stage of a phase's work, between verify.Before and
// verify.After: no gate carries it; an interrupted run names it
// (Interrupted.Stage).
const Do verify.Stage = "do"

// Execute runs the phases in order under the stop rule and returns the first
// error that is not a gate result (nil when every stop was a gate).
func Execute(ctx context.Context, run *Run, phases ...Phase) error {
	if run.Now == nil {
		run.Now = time.Now
	}
	if run.Progress == nil {
		run.Progress = func(string) {}
	}
	r := run.Report
	stopped := ""
	var firstErr error
	var done []string
	for _, p := range phases {
		name := p.Name()
		if stopped != "" {
			r.Add(verify.Missing(p.Gates(), phaseChecks(r, name), stopped)...)
			if run.OnPhaseDone != nil {
				run.OnPhaseDone(name, verify.Skip, 0)
			}
			continue
		}
		if run.OnPhase != nil {
			run.OnPhase(name)
		}
		start := run.Now()
		why, afterOnly, stage, err := runPhase(ctx, run, p)
		r.Timed(name, run.Now().Sub(start).Round(time.Millisecond))
		// A signal stops the run whatever the phase made of its cancelled
		// context (an error, or a wait that failed as a gate).
		if ie := interrupted(ctx, run, name, stage, done); ie != nil {
			err = ie
		}
		mine := phaseChecks(r, name)
		if err != nil {
			why = fmt.Sprintf("not run: phase %s stopped: %s", name, oneLine(run.reword(err)))
			firstErr = err
		}
		if why != "" {
			// Gates a complete phase did not report did not apply; these
			// did not run, and say why.
			for _, c := range verify.Missing(p.Gates(), mine, why) {
				if afterOnly && c.Stage != verify.After {
					continue // it ran its before-gates: the others did not apply
				}
				c.Optional = c.Optional || run.DryRun && err == nil && c.Stage == verify.After
				r.Add(c)
			}
		}
		if run.OnPhaseDone != nil {
			v := verify.Pass
			for _, pr := range r.Phases() {
				if pr.Name == name {
					v = pr.Verdict
				}
			}
			if err != nil {
				v = verify.Fail
			}
			run.OnPhaseDone(name, v, run.Now().Sub(start))
		}
		if err == nil {
			done = append(done, name)
		}
		switch {
		case err != nil:
			stopped = why
		case run.KeepGoing && stage == verify.After:
			// Read-only: the next phase reads on regardless.
		case verify.Blocks(phaseChecks(r, name)...):
			stopped = fmt.Sprintf("not run: phase %s did not pass", name)
		}
	}
	return firstErr
}

// runPhase is one phase: before-gates, then the work, then after-gates. It
// returns why the gates it did not reach did not run ("" when it ran
// through), and whether only the after-gates are concerned.
func runPhase(ctx context.Context, run *Run, p Phase) (why string, afterOnly bool, stage verify.Stage, err error) {
	before, err := p.Before(ctx, run)
	run.Report.Add(before...)
	if err != nil {
		return "", false, verify.Before, err
	}
	if verify.Blocks(before...) {
		return "not run: a gate before phase " + p.Name() + " did not pass; nothing was changed", false, verify.Before, nil
	}
	if ro, ok := p.(ReadOnly); !run.DryRun && !run.wrote && run.BeforeWrite != nil && (!ok || !ro.ReadOnly()) {
		run.wrote = true
		if err := run.BeforeWrite(ctx); err != nil {
			return "", false, verify.Before, err
		}
	}
	if err := p.Do(ctx, run); err != nil {
		return "", false, Do, err
	}
	if run.DryRun {
		return "dry run: nothing was applied, so there is nothing to prove", true, Do, nil
	}
	if verify.Blocks(phaseChecks(run.Report, p.Name())...) {
		return "not run: phase " + p.Name() + " failed before it could be proven", true, Do, nil
	}
	run.Report.Add(p.After(ctx, run)...)
	return "", false, verify.After, nil
}

func phaseChecks(r *verify.Report, phase string) []verify.Check {
	var out []verify.Check
	for _, c := range r.Checks {
		if c.Phase == phase {
			out = append(out, c)
		}
	}
	return out
}

func oneLine(err error) string {
	var si *Interrupted
	if errors.As(err, &si) {
		return si.Signal.Error()
	}
	var ie *verify.InputError
	if errors.As(err, &ie) {
		return "input error"
	}
	s := err.Error()
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

// ReadOnly is a phase that writes nothing (its gates and work only read:
// the offline check, the inputs' proof): the cluster lock (BeforeWrite),
// which may create the Flux namespace, waits for the first phase that
// writes, so a refusal before it leaves the cluster untouched.
type ReadOnly interface {
	ReadOnly() bool
}

// Base is the stages a phase may not need: no before-gates, no work,
// nothing left to prove after. A phase embeds it and defines only the
// stages it has (a read-only phase no Do; a phase whose work proves its own
// outcome no After).
type Base struct{}

// Before reports no gate.
func (Base) Before(context.Context, *Run) ([]verify.Check, error) { return nil, nil }

// Do changes nothing.
func (Base) Do(context.Context, *Run) error { return nil }

// After proves nothing.
func (Base) After(context.Context, *Run) []verify.Check { return nil }
