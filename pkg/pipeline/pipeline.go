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

	"github.com/homelab-ops/bootstrap/pkg/gate"
)

// Phase is one step of a bring-up.
type Phase interface {
	// Name is the phase's name in reports ("controllers", "sync" …).
	Name() string
	// Gates declares every gate the phase may report.
	Gates() []gate.Def
	// Before checks what must hold before anything is changed.
	Before(ctx context.Context, run *Run) []gate.Check
	// Do does the phase's work: plan, then (unless a dry run) apply. Checks
	// it makes on the way go to run.Report. An error that is not a gate
	// result (input error, a broken connection) stops the pipeline.
	Do(ctx context.Context, run *Run) error
	// After proves the phase landed. Not called on a dry run.
	After(ctx context.Context, run *Run) []gate.Check
}

// Run is what the phases share: the report they write into, whether this is
// a dry run, and where progress goes.
type Run struct {
	Report *gate.Report
	DryRun bool
	// Progress receives one line per step a person may want to follow.
	Progress func(line string)
	// Now is the clock (tests set it).
	Now func() time.Time
}

// Progressf formats a progress line.
func (r *Run) Progressf(format string, a ...any) {
	if r.Progress != nil {
		r.Progress(fmt.Sprintf(format, a...))
	}
}

// Timing is how long each phase took, in the report's facts.
const timingFact = "duration."

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
	for _, p := range phases {
		name := p.Name()
		if stopped != "" {
			r.Add(gate.Missing(p.Gates(), phaseChecks(r, name), stopped)...)
			continue
		}
		start := run.Now()
		err := runPhase(ctx, run, p)
		r.Facts[timingFact+name] = run.Now().Sub(start).Round(time.Millisecond).String()
		mine := phaseChecks(r, name)
		switch {
		case err != nil:
			stopped = fmt.Sprintf("not run: phase %s stopped: %s", name, oneLine(err))
			r.Add(gate.Missing(p.Gates(), mine, stopped)...)
			firstErr = err
			continue
		case gate.Blocks(mine...):
			stopped = fmt.Sprintf("not run: phase %s did not pass", name)
		}
		why := "not run: the gates before phase " + name + " did not pass; nothing was changed"
		if run.DryRun {
			why = "dry run: nothing was applied, so there is nothing to prove"
		}
		for _, c := range gate.Missing(p.Gates(), mine, why) {
			// On a dry run the unproven after-gates are expected, not missing.
			c.Optional = c.Optional || run.DryRun && c.Stage == gate.After
			r.Add(c)
		}
	}
	return firstErr
}

// runPhase is one phase: before-gates, then the work, then after-gates.
func runPhase(ctx context.Context, run *Run, p Phase) error {
	before := p.Before(ctx, run)
	run.Report.Add(before...)
	if gate.Blocks(before...) {
		return nil
	}
	if err := p.Do(ctx, run); err != nil {
		return err
	}
	if run.DryRun || gate.Blocks(phaseChecks(run.Report, p.Name())...) {
		return nil
	}
	run.Report.Add(p.After(ctx, run)...)
	return nil
}

func phaseChecks(r *gate.Report, phase string) []gate.Check {
	var out []gate.Check
	for _, c := range r.Checks {
		if c.Phase == phase {
			out = append(out, c)
		}
	}
	return out
}

func oneLine(err error) string {
	var ie *gate.InputError
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
