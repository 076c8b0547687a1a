// Package verify is the gate vocabulary of the bootstrap tool: every phase
// proves what it did with checks, and a report sums them up.
//
// A gate is declared once as a Def (its ID, the phase and Stage it guards,
// a title); a run of it is a Check with a Verdict (Pass, Fail, Warn, Skip),
// a one-line Message that says what to do on failure, and the Evidence read.
// Gates of one kind per object are a family (Def.Prefix, Def.Each). A Check
// may carry located Findings (file, line, detector, fix), which the text
// report groups by cause.
//
// A Report gathers the checks of one command run with its warnings, facts,
// the objects it planned or applied (ObjectChange), and any error that
// stopped it early. Report.Verdict sums it up: a failed check fails the
// run; a required check that skipped (could not run) makes it incomplete
// (Skip), never a pass; Missing names the declared gates that did not run
// at all. What a verdict means for a process's exit code is the program's
// to decide: Report.ExitCode carries that decision into the written report.
//
// The writers render a report for people and for tools: WriteText (what
// did not pass, findings grouped), WriteVerbose (every check with its
// evidence), WriteSummary (the quiet form), WriteJSON (one document) and
// WriteJUnit (one suite per phase, one case per check, for CI). The SARIF
// log of `bootstrap check` is written by the check package, whose rules are
// its detectors.
//
// InputError is the domain error for input the caller must fix (a flag,
// file, option or object was refused), as opposed to a failure of the work
// itself; errors.As finds it through any %w wrapping.
package verify
