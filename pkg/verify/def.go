package verify

import (
	"fmt"
	"strings"
)

// Def declares a gate once: its ID, the phase and stage it guards and what it
// checks. Phases list their Defs so a report can name every gate that did not
// run, and build checks from them with Pass, Fail, Warn and Skip.
type Def struct {
	// ID is the gate's stable name, e.g. "overlay.args-preserved".
	ID string
	// Phase and Stage are where it runs.
	Phase string
	Stage Stage
	// Title says what is checked, in a few words.
	Title string
	// Optional gates do not make a run incomplete when they skip.
	Optional bool
	// Prefix marks a family of gates, one per object: its checks have IDs
	// ID + "/" + suffix (e.g. converge.node/<name>), made with Each.
	Prefix bool
}

// Each is the Def of one member of a gate family.
func (d Def) Each(suffix string) Def {
	d.ID = d.ID + "/" + suffix
	d.Prefix = false
	return d
}

func (d Def) check(v Verdict, msg string, evidence []string) Check {
	return Check{ID: d.ID, Phase: d.Phase, Stage: d.Stage, Title: d.Title, Optional: d.Optional, Verdict: v, Message: msg, Evidence: evidence}
}

// Pass is the gate passing.
func (d Def) Pass(msg string, evidence ...string) Check { return d.check(Pass, msg, evidence) }

// Fail is the gate failing; msg says what to do.
func (d Def) Fail(msg string, evidence ...string) Check { return d.check(Fail, msg, evidence) }

// Warn is the gate passing with a caveat.
func (d Def) Warn(msg string, evidence ...string) Check { return d.check(Warn, msg, evidence) }

// Skip is the gate not checked; msg says why. Unless the gate is optional,
// the run is then incomplete (exit 3).
func (d Def) Skip(msg string, evidence ...string) Check { return d.check(Skip, msg, evidence) }

// Passf, Failf, Warnf and Skipf format the message.
func (d Def) Passf(format string, a ...any) Check { return d.Pass(fmt.Sprintf(format, a...)) }

// Skipf formats a skip message.
func (d Def) Skipf(format string, a ...any) Check { return d.Skip(fmt.Sprintf(format, a...)) }

// Blocks says whether checks stop what follows: a failure, or a required
// gate that could not be checked.
func Blocks(cs ...Check) bool {
	t := TallyOf(cs...)
	return t.Fail > 0 || t.RequiredSkips > 0
}

// Missing lists the gates of defs that no check reports (families count when
// any member reports), as skips saying why they did not run.
func Missing(defs []Def, have []Check, why string) []Check {
	var out []Check
	for _, d := range defs {
		found := false
		for _, c := range have {
			if c.ID == d.ID || (d.Prefix && strings.HasPrefix(c.ID, d.ID+"/")) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, d.Skip(why))
		}
	}
	return out
}

// New is a check of the gate with no verdict yet, for code that decides the
// verdict and message further on.
func (d Def) New() Check {
	return Check{ID: d.ID, Phase: d.Phase, Stage: d.Stage, Title: d.Title, Optional: d.Optional}
}

// At is the Def at another stage (a gate that runs before on a dry run and
// after on an apply).
func (d Def) At(s Stage) Def {
	d.Stage = s
	return d
}
