package verify

import (
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/ssa"
)

// Verdict is the outcome of one check.
type Verdict string

// Verdicts. Skip is never success: a required check that skipped makes the
// run incomplete.
const (
	Pass Verdict = "pass"
	Fail Verdict = "fail"
	Warn Verdict = "warn"
	Skip Verdict = "skip"
)

// Stage says whether a check guards the start or proves the end of a phase.
type Stage string

// Stages.
const (
	Before Stage = "before"
	After  Stage = "after"
)

// Check is one gate's result.
type Check struct {
	// ID is stable across runs, e.g. "overlay.patch-landed/1".
	ID string `json:"id"`
	// Phase is the phase the check guards, e.g. "controllers".
	Phase string `json:"phase"`
	// Stage says whether it guards the phase's start or proves its end.
	Stage Stage `json:"stage"`
	// Title says what is checked, in a few words.
	Title string `json:"title"`
	// Verdict is the outcome.
	Verdict Verdict `json:"verdict"`
	// Optional checks do not make a run incomplete when they skip.
	Optional bool `json:"optional,omitempty"`
	// Message is the one-line outcome a person reads first; on failure it
	// says what to do.
	Message string `json:"message"`
	// Evidence is what was read, and from where.
	Evidence []string `json:"evidence,omitempty"`
	// Findings are the located defects behind the verdict, when the gate
	// has them (check's detectors); the text report groups them.
	Findings []Finding `json:"findings,omitempty"`
}

// ObjectChange is what happens, or happened, to one object.
type ObjectChange struct {
	// Object is kind/namespace/name.
	Object string `json:"object"`
	// Action is what server-side apply does or did to it: created,
	// configured, unchanged, deleted or skipped (fluxcd/pkg/ssa's
	// ChangeSetEntry.Action, the actions Flux's own apply reports).
	Action ssa.Action `json:"action"`
	// Restarts is true for a workload whose pod template changes.
	Restarts bool `json:"restarts,omitempty"`
	// TakenOverFrom lists other field managers this apply takes over.
	TakenOverFrom []string `json:"takenOverFrom,omitempty"`
	// Note says why the object is in the plan when its file does not
	// (e.g. "seeded for the root's first reconcile, from FILE"); never a
	// value.
	Note string `json:"note,omitempty"`
}

// Changed says whether any change is more than unchanged or skipped.
func Changed(changes []ObjectChange) bool {
	for _, c := range changes {
		if c.Action != ssa.UnchangedAction && c.Action != ssa.SkippedAction {
			return true
		}
	}
	return false
}

// PhaseResult summarises the checks of one phase.
type PhaseResult struct {
	// Name is the phase's.
	Name string `json:"name"`
	// Duration is how long the phase ran (Report.Durations, as
	// time.Duration writes it; empty when it did not).
	Duration string `json:"duration,omitempty"`
	// Verdict sums the phase's checks up.
	Verdict Verdict `json:"verdict"`
	// Pass, Fail, Warn and Skip count its checks of each verdict.
	Pass int `json:"pass"`
	Fail int `json:"fail"`
	Warn int `json:"warn"`
	Skip int `json:"skip"`
}

// Report gathers the checks of one run.
type Report struct {
	// Command is the command that ran, e.g. "render".
	Command string `json:"command"`
	// Changed reports whether the run changed anything outside the process.
	Changed bool `json:"changed"`
	// Warnings are run-wide notices, e.g. that overlays were skipped.
	Warnings []string `json:"warnings,omitempty"`
	// Error is what stopped the run early when it was not a gate result:
	// an input the caller gave that was refused (an InputError), or a
	// failure such as a lost connection. It is never dressed up as a gate.
	Error string `json:"error,omitempty"`
	// ExitCode is the exit code the program that ran the gates gives this
	// report, set by it before the report is written (the bootstrap CLI
	// sets it from its exit-code table); the writers carry it as it is.
	ExitCode int     `json:"-"`
	Checks   []Check `json:"checks"`
	// Objects is the plan or the outcome of an apply, one entry per object.
	Objects []ObjectChange `json:"objects,omitempty"`
	// DryRun says nothing was changed; Changed then means "would change".
	DryRun bool `json:"dryRun,omitempty"`
	// Facts are named results a caller may want, e.g. the Flux version.
	Facts map[string]string `json:"facts,omitempty"`
	// Durations are how long each phase ran, by phase name (Timed); the
	// writers show them as PhaseResult.Duration.
	Durations map[string]time.Duration `json:"-"`
}

// NewReport starts a report for a command.
func NewReport(command string) *Report {
	return &Report{Command: command, Checks: []Check{}, Facts: map[string]string{}}
}

// Timed records how long phase ran.
func (r *Report) Timed(phase string, d time.Duration) {
	if r.Durations == nil {
		r.Durations = map[string]time.Duration{}
	}
	r.Durations[phase] = d
}

// Add appends checks.
func (r *Report) Add(cs ...Check) { r.Checks = append(r.Checks, cs...) }

// Rewrite replaces every text of the report — the error, warnings, each
// check's title, message and evidence, the facts and the object names —
// with f of it (redaction before a report leaves the process).
func (r *Report) Rewrite(f func(string) string) {
	r.Error = f(r.Error)
	for i := range r.Warnings {
		r.Warnings[i] = f(r.Warnings[i])
	}
	for i := range r.Checks {
		c := &r.Checks[i]
		c.Title, c.Message = f(c.Title), f(c.Message)
		for j := range c.Evidence {
			c.Evidence[j] = f(c.Evidence[j])
		}
		for j := range c.Findings {
			c.Findings[j].rewrite(f)
		}
	}
	for k, v := range r.Facts {
		r.Facts[k] = f(v)
	}
	for i := range r.Objects {
		r.Objects[i].Object = f(r.Objects[i].Object)
	}
}

// Warn records a run-wide warning.
func (r *Report) Warn(msg string) { r.Warnings = append(r.Warnings, msg) }

// Tally is checks counted by verdict: the one count the phase summaries,
// the run's verdict, Blocks and the exit code are decided from. A verdict
// not in the vocabulary (a bug in a gate) counts as a failure, never as
// success.
type Tally struct {
	Pass, Fail, Warn, Skip int
	// RequiredSkips are the skips of required (not Optional) checks.
	RequiredSkips int
}

// TallyOf counts cs.
func TallyOf(cs ...Check) Tally {
	var t Tally
	for _, c := range cs {
		t.Add(c)
	}
	return t
}

// Add counts c.
func (t *Tally) Add(c Check) {
	switch c.Verdict {
	case Pass:
		t.Pass++
	case Warn:
		t.Warn++
	case Skip:
		t.Skip++
		if !c.Optional {
			t.RequiredSkips++
		}
	default: // Fail, or an unknown verdict
		t.Fail++
	}
}

// Verdict is what the counted checks say together: fail when one failed,
// skip when a required one could not be checked, warn when one warned,
// pass otherwise (optional skips do not count).
func (t Tally) Verdict() Verdict {
	switch {
	case t.Fail > 0:
		return Fail
	case t.RequiredSkips > 0:
		return Skip
	case t.Warn > 0:
		return Warn
	}
	return Pass
}

// Phases summarises checks per phase, in first-seen order.
func (r *Report) Phases() []PhaseResult {
	var names []string
	tallies := map[string]*Tally{}
	for _, c := range r.Checks {
		t := tallies[c.Phase]
		if t == nil {
			t = &Tally{}
			tallies[c.Phase] = t
			names = append(names, c.Phase)
		}
		t.Add(c)
	}
	out := make([]PhaseResult, 0, len(names))
	for _, n := range names {
		t := tallies[n]
		// A phase whose only skips are optional is headed as the summary
		// line and the exit code count it: pass or warn, not skip.
		dur := ""
		if d, ok := r.Durations[n]; ok {
			dur = d.String()
		}
		out = append(out, PhaseResult{Name: n, Duration: dur, Verdict: t.Verdict(), Pass: t.Pass, Fail: t.Fail, Warn: t.Warn, Skip: t.Skip})
	}
	return out
}

// Verdict is the run's overall verdict: fail when the run stopped with an
// Error, a check failed or has a verdict not in this vocabulary (a bug in
// a gate, never counted as success); skip when a required (not Optional)
// check could not be checked; warn when a check or the run warned; pass
// otherwise.
func (r *Report) Verdict() Verdict {
	if r.Error != "" {
		return Fail
	}
	v := TallyOf(r.Checks...).Verdict()
	if v == Pass && len(r.Warnings) > 0 {
		return Warn
	}
	return v
}

// InputError is a domain error: the caller's input was refused — a bad
// option value, an unknown version or component, a malformed overlay, a
// file that is not a regular file inside its directory or is too large.
// Err says which input and what to do; errors.As finds an InputError
// through %w wrapping, and Unwrap reaches Err.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

// InputErrorf builds an InputError; %w wraps as in fmt.Errorf.
func InputErrorf(format string, args ...any) error {
	return &InputError{Err: fmt.Errorf(format, args...)}
}

// IsInput reports whether err is, or wraps, an InputError.
func IsInput(err error) bool {
	var ie *InputError
	return errors.As(err, &ie)
}
