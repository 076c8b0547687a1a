package verify

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
)

// WriteText writes the human report a person reads: findings, not passes.
// One summary line per gate (a family of per-object gates, e.g.
// check.substitution/<ns>/<name>, is one gate with its counts), then under
// it every member that did not pass with its evidence, and the findings
// grouped: one block per detector and cause, naming how many Kustomizations
// it affects and the first few, with one fix. WriteVerbose has every check
// with its evidence.
func WriteText(w io.Writer, r *Report) error {
	var b strings.Builder
	for _, msg := range r.Warnings {
		fmt.Fprintf(&b, "WARNING: %s\n", msg)
	}
	for _, fam := range families(r.Checks) {
		fam.write(&b)
	}
	writeEnd(&b, r, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteVerbose writes every check, one line each, with its evidence, then
// the summary line with the exit code.
func WriteVerbose(w io.Writer, r *Report) error { return writeText(w, r, r) }

// writeText writes r's checks and the summary line of whole, whose counts
// are the run's even when r shows an excerpt.
func writeText(w io.Writer, r, whole *Report) error {
	var b strings.Builder
	for _, msg := range r.Warnings {
		fmt.Fprintf(&b, "WARNING: %s\n", msg)
	}
	for _, c := range r.Checks {
		fmt.Fprintf(&b, "%-4s  %s/%s  %s: %s\n", strings.ToUpper(string(c.Verdict)), c.Phase, c.Stage, c.ID, c.Message)
		for _, e := range c.Evidence {
			fmt.Fprintf(&b, "        %s\n", e)
		}
	}
	writeEnd(&b, r, whole)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeEnd writes r's error and the summary line of whole.
func writeEnd(b *strings.Builder, r, whole *Report) {
	if r.Error != "" {
		fmt.Fprintf(b, "error: %s\n", r.Error)
	}
	t := TallyOf(whole.Checks...)
	v := whole.Verdict()
	exit := fmt.Sprintf("; exit %d", whole.ExitCode)
	if whole.ExitCode == 0 && (v == Fail || v == Skip) {
		// No program set the exit code (a library caller's report): a
		// failure is never written as "exit 0".
		exit = ""
	}
	fmt.Fprintf(b, "%s: %s (%d pass, %d fail, %d warn, %d skip%s)\n",
		whole.Command, strings.ToUpper(string(v)), t.Pass, t.Fail, t.Warn, t.Skip, exit)
}

// family is the checks of one gate: a single check, or the members of a
// per-object family (IDs sharing what precedes the first "/").
type family struct {
	id     string
	checks []Check
}

func families(cs []Check) []*family {
	var out []*family
	idx := map[string]*family{}
	for _, c := range cs {
		id, _, _ := strings.Cut(c.ID, "/")
		f := idx[id]
		if f == nil {
			f = &family{id: id}
			idx[id] = f
			out = append(out, f)
		}
		f.checks = append(f.checks, c)
	}
	return out
}

// write writes the family's summary line, its members that did not pass
// (those without findings with their evidence) and its findings' blocks.
func (f *family) write(b *strings.Builder) {
	var p Tally
	findings := 0
	for _, c := range f.checks {
		p.Add(c)
		for _, x := range c.Findings {
			if x.Verdict != Pass {
				findings++
			}
		}
	}
	v := p.Verdict()
	if p.Skip > 0 && p.Pass+p.Fail+p.Warn == 0 {
		// Optional checks that did not run (a dry run's after-gates) are
		// written as what they are; the run's verdict does not count them.
		v = Skip
	}
	first := f.checks[0]
	single := len(f.checks) == 1 && first.ID == f.id
	msg := first.Message
	if !single || findings > 0 {
		var n []string
		for _, x := range []struct {
			n int
			v Verdict
		}{{p.Pass, Pass}, {p.Fail, Fail}, {p.Warn, Warn}, {p.Skip, Skip}} {
			if x.n > 0 {
				n = append(n, fmt.Sprintf("%d %s", x.n, x.v))
			}
		}
		msg = strings.Join(n, ", ")
		if findings > 0 {
			msg += fmt.Sprintf(" (%d finding(s))", findings)
		}
		if first.Title != "" {
			msg += " — " + first.Title
		}
	}
	fmt.Fprintf(b, "%-4s  %s/%s  %s: %s\n", strings.ToUpper(string(v)), first.Phase, first.Stage, f.id, msg)
	for _, c := range f.checks {
		if c.Verdict == Pass || len(c.Findings) > 0 {
			continue
		}
		ind := "        "
		if !single {
			fmt.Fprintf(b, "      %-4s  %s: %s\n", strings.ToUpper(string(c.Verdict)), c.ID, c.Message)
			ind = "            "
		}
		for _, e := range c.Evidence {
			fmt.Fprintf(b, "%s%s\n", ind, e)
		}
	}
	// Failures each in full; advisories (warnings) the first few blocks of
	// each detector, then how many more: a passing repository's report stays
	// on one screen (issue #45) and --verbose, JSON and SARIF keep them all.
	groups := groupFindings(f.checks)
	warns := map[Detector]int{}
	for _, g := range groups {
		if g.fs[0].Verdict == Warn {
			warns[g.fs[0].Detector]++
		}
	}
	shown := map[Detector]int{}
	type rest struct{ blocks, findings int }
	more := map[Detector]*rest{}
	var order []Detector
	for _, g := range groups {
		d := g.fs[0].Detector
		if g.fs[0].Verdict == Warn {
			// One more block is shown rather than a line saying so.
			if shown[d] == maxNamed && warns[d] > maxNamed+1 {
				if more[d] == nil {
					more[d] = &rest{}
					order = append(order, d)
				}
				more[d].blocks++
				more[d].findings += len(g.fs)
				continue
			}
			shown[d]++
		}
		g.write(b)
	}
	for _, d := range order {
		fmt.Fprintf(b, "      %-4s  [%s] and %d more block(s) like these (%d finding(s)); --verbose lists each\n", strings.ToUpper(string(Warn)), d, more[d].blocks, more[d].findings)
	}
}

// WriteSummary is the quiet report: warnings, every check that did not pass
// or warn, the error, and the summary line.
func WriteSummary(w io.Writer, r *Report) error {
	short := *r
	short.Checks = nil
	for _, c := range r.Checks {
		if c.Verdict == Fail || (c.Verdict == Skip && !c.Optional) {
			short.Checks = append(short.Checks, c)
		}
	}
	return writeText(w, &short, r)
}

type jsonReport struct {
	*Report
	Verdict  Verdict       `json:"verdict"`
	ExitCode int           `json:"exitCode"`
	Phases   []PhaseResult `json:"phases"`
}

// WriteJSON writes the report as one JSON document.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(jsonReport{Report: r, Verdict: r.Verdict(), ExitCode: r.ExitCode, Phases: r.Phases()})
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name       string        `xml:"name,attr"`
	Classname  string        `xml:"classname,attr"`
	Properties *junitProps   `xml:"properties,omitempty"`
	Failure    *junitMessage `xml:"failure,omitempty"`
	Error      *junitMessage `xml:"error,omitempty"`
	Skipped    *junitMessage `xml:"skipped,omitempty"`
	SystemOut  string        `xml:"system-out,omitempty"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML: one suite per phase, one case
// per check. A skip is <skipped/>, a failure <failure/>, and a warning keeps
// its verdict in a property and in system-out so CI shows it.
func WriteJUnit(w io.Writer, r *Report) error {
	doc := junitSuites{Name: "bootstrap " + r.Command}
	idx := map[string]int{}
	for _, c := range r.Checks {
		i, ok := idx[c.Phase]
		if !ok {
			i = len(doc.Suites)
			idx[c.Phase] = i
			doc.Suites = append(doc.Suites, junitSuite{Name: c.Phase})
		}
		s := &doc.Suites[i]
		evidence := strings.Join(c.Evidence, "\n")
		tc := junitCase{
			Name:       c.ID,
			Classname:  c.Phase + "." + string(c.Stage),
			Properties: &junitProps{Props: []junitProp{{Name: "verdict", Value: string(c.Verdict)}, {Name: "title", Value: c.Title}}},
		}
		switch c.Verdict {
		case Fail:
			tc.Failure = &junitMessage{Message: c.Message, Body: evidence}
			s.Failures++
		case Skip:
			tc.Skipped = &junitMessage{Message: c.Message, Body: evidence}
			s.Skipped++
		case Warn:
			tc.SystemOut = "WARNING: " + c.Message + "\n" + evidence
		case Pass:
			tc.SystemOut = c.Message + "\n" + evidence
		default:
			tc.Error = &junitMessage{Message: fmt.Sprintf("unknown verdict %q: %s", c.Verdict, c.Message)}
			s.Errors++
		}
		s.Tests++
		s.Cases = append(s.Cases, tc)
	}
	if r.Error != "" || len(r.Warnings) > 0 {
		s := junitSuite{Name: "run"}
		for i, msg := range r.Warnings {
			s.Cases = append(s.Cases, junitCase{Name: fmt.Sprintf("warning/%d", i+1), Classname: "run",
				Properties: &junitProps{Props: []junitProp{{Name: "verdict", Value: string(Warn)}}},
				SystemOut:  "WARNING: " + msg})
			s.Tests++
		}
		if r.Error != "" {
			s.Cases = append(s.Cases, junitCase{Name: "input", Classname: "run", Error: &junitMessage{Message: r.Error}})
			s.Tests++
			s.Errors++
		}
		doc.Suites = append(doc.Suites, s)
	}
	for _, s := range doc.Suites {
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
