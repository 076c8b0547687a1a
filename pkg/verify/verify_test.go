package verify

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
)

// TestVerdict: the run's overall verdict (what exit code it means is the
// program's: internal/session's TestCodeOfReport holds the same rows).
func TestVerdict(t *testing.T) {
	tests := []struct {
		name     string
		verdicts []Verdict
		optional bool
		inputErr string
		want     Verdict
	}{
		{"all pass", []Verdict{Pass, Pass}, false, "", Pass},
		{"warn is success", []Verdict{Pass, Warn}, false, "", Warn},
		{"fail wins", []Verdict{Skip, Fail, Pass}, false, "", Fail},
		{"required skip is incomplete", []Verdict{Pass, Skip}, false, "", Skip},
		{"optional skip is fine", []Verdict{Pass, Skip}, true, "", Pass},
		{"unknown verdict is never success", []Verdict{"maybe"}, false, "", Fail},
		{"input error", nil, false, "bad flag", Fail},
		{"no checks", nil, false, "", Pass},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewReport("test")
			r.Error = tt.inputErr
			for i, v := range tt.verdicts {
				r.Add(Check{ID: string(rune('a' + i)), Phase: "p", Verdict: v, Optional: tt.optional && v == Skip})
			}
			if got := r.Verdict(); got != tt.want {
				t.Errorf("verdict %s, want %s", got, tt.want)
			}
		})
	}
}

func sample() *Report {
	r := NewReport("render")
	r.Warn("overlays skipped")
	r.Add(
		Check{ID: "a", Phase: "controllers", Stage: Before, Verdict: Pass, Message: "fine", Evidence: []string{"read x"}},
		Check{ID: "b", Phase: "controllers", Stage: Before, Verdict: Warn, Message: "careful"},
		Check{ID: "c", Phase: "sync", Stage: After, Verdict: Skip, Message: "could not look"},
		Check{ID: "d", Phase: "sync", Stage: After, Verdict: Fail, Message: "broken & <bad>"},
	)
	return r
}

func TestJUnit(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJUnit(&buf, sample()); err != nil {
		t.Fatal(err)
	}
	var doc junitSuites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit is not XML: %v\n%s", err, buf.String())
	}
	if doc.Tests != 5 || doc.Failures != 1 || doc.Skipped != 1 {
		t.Errorf("tests=%d failures=%d skipped=%d, want 5 1 1", doc.Tests, doc.Failures, doc.Skipped)
	}
	cases := map[string]junitCase{}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			cases[c.Name] = c
		}
	}
	if cases["c"].Skipped == nil || cases["c"].Failure != nil {
		t.Errorf("skip must be <skipped/>, got %+v", cases["c"])
	}
	if cases["d"].Failure == nil || cases["d"].Failure.Message != "broken & <bad>" {
		t.Errorf("fail must be <failure/> with the message, got %+v", cases["d"])
	}
	if !strings.Contains(cases["b"].SystemOut, "WARNING: careful") {
		t.Errorf("warn must be visible, got %+v", cases["b"])
	}
	if !strings.Contains(cases["warning/1"].SystemOut, "overlays skipped") {
		t.Errorf("run-wide warning missing from JUnit")
	}
}

func TestJSONAndText(t *testing.T) {
	r := sample()
	r.ExitCode = 1 // the program's decision, carried as it is
	var buf bytes.Buffer
	if err := WriteJSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Changed  *bool
		ExitCode int
		Verdict  string
		Warnings []string
		Phases   []PhaseResult
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Changed == nil || doc.ExitCode != 1 || doc.Verdict != "fail" || len(doc.Warnings) != 1 {
		t.Errorf("JSON summary wrong: %s", buf.String())
	}
	if len(doc.Phases) != 2 || doc.Phases[0].Verdict != Warn || doc.Phases[1].Verdict != Fail {
		t.Errorf("phases wrong: %+v", doc.Phases)
	}
	buf.Reset()
	if err := WriteText(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"WARNING: overlays skipped", "SKIP  sync/after  c: could not look", "FAIL  sync/after  d:", "exit 1"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, buf.String())
		}
	}
}

// TestPhaseHeadingCountsOptionalSkips: a phase whose only skips are
// optional is headed as the exit code counts it; a required skip is skip.
func TestPhaseHeadingCountsOptionalSkips(t *testing.T) {
	opt := Def{ID: "p.optional", Phase: "p", Optional: true}
	req := Def{ID: "p.required", Phase: "p"}
	ok := Def{ID: "p.ok", Phase: "p"}
	warn := Def{ID: "p.warn", Phase: "p"}
	for _, c := range []struct {
		name   string
		checks []Check
		want   Verdict
	}{
		{"optional skip only", []Check{ok.Pass(""), opt.Skip("not asked")}, Pass},
		{"optional skip and a warning", []Check{warn.Warn(""), opt.Skip("not asked")}, Warn},
		{"required skip", []Check{ok.Pass(""), req.Skip("could not run")}, Skip},
		{"fail wins", []Check{req.Skip(""), ok.Fail("")}, Fail},
	} {
		r := NewReport("t")
		r.Add(c.checks...)
		ph := r.Phases()
		if len(ph) != 1 || ph[0].Verdict != c.want {
			t.Errorf("%s: phase %+v, want %s", c.name, ph, c.want)
		}
	}
}

// TestTextGroupsFindings: the default text report is a summary line per
// gate (a family of per-object checks is one gate), the evidence of what
// did not pass, and one block per detector and cause; passes' evidence
// and every finding are in WriteVerbose.
func TestTextGroupsFindings(t *testing.T) {
	fam := Def{ID: "s.race", Phase: "static", Stage: Before, Prefix: true, Title: "depends on its applier"}
	one := Def{ID: "s.render", Phase: "static", Stage: Before}
	r := NewReport("check")
	r.Add(one.Pass("builds", "evidence of a pass"))
	for _, k := range []string{"ns/a", "ns/b", "ns/c", "ns/d", "ns/e"} {
		c := fam.Each(k).Fail("child "+k+" races", "evidence "+k)
		c.Findings = []Finding{{Detector: "race", Verdict: Fail, File: k + ".yaml", Line: 1, Message: "child " + k + " races", Fix: "fix " + k,
			Subject: k, Cause: "substitute from settings without depending on parent", CauseFix: "one patch in the parent"}}
		r.Add(c)
	}
	r.Add(fam.Each("ns/f").Pass("waits"), fam.Each("ns/g").Skip("not built", "why g"))
	r.ExitCode = 1 // the program's decision, carried as it is
	var b bytes.Buffer
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	want := `PASS  static/before  s.render: builds
FAIL  static/before  s.race: 1 pass, 5 fail, 1 skip (5 finding(s)) — depends on its applier
      SKIP  s.race/ns/g: not built
            why g
      FAIL  [race] substitute from settings without depending on parent — 5 Kustomization(s): ns/a, ns/b, ns/c and 2 more
            at ns/a.yaml:1 (and 4 other place(s); --verbose lists each)
            fix: one patch in the parent
check: FAIL (2 pass, 5 fail, 0 warn, 1 skip; exit 1)
`
	if text != want {
		t.Fatalf("text report:\n%s\nwant:\n%s", text, want)
	}
	b.Reset()
	if err := WriteVerbose(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"evidence of a pass", "FAIL  static/before  s.race/ns/e: child ns/e races", "        evidence ns/e", "PASS  static/before  s.race/ns/f: waits"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("verbose report lacks %q:\n%s", w, b.String())
		}
	}
	// A block without a fix for the cause whose findings' fixes differ
	// does not print the first Kustomization's fix as everyone's (review
	// item 9); the same fix for all is printed.
	for _, tc := range []struct {
		fixes []string
		want  string
	}{
		{[]string{"define X for ns/a", "define X for ns/b"}, "            fix: one per Kustomization (--verbose lists each)\n"},
		{[]string{"define X", "define X"}, "            fix: define X\n"},
	} {
		r = NewReport("check")
		for i, k := range []string{"ns/a", "ns/b"} {
			c := fam.Each(k).Fail("x")
			c.Findings = []Finding{{Detector: "undefined", Verdict: Fail, File: k + ".yaml", Line: 1, Message: "${X} in " + k, Fix: tc.fixes[i], Subject: k, Cause: "${X} is not defined"}}
			r.Add(c)
		}
		b.Reset()
		_ = WriteText(&b, r)
		if !strings.Contains(b.String(), tc.want) || strings.Count(b.String(), "fix:") != 1 {
			t.Fatalf("fixes %q: want %q in:\n%s", tc.fixes, tc.want, b.String())
		}
	}
	// One finding alone: its location, message, occurrences and fix.
	r = NewReport("check")
	c := one.Fail("x")
	c.Findings = []Finding{{Detector: "undefined", Verdict: Fail, File: "d.json", Line: 5, Lines: []int{5, 6, 7}, Count: 3, Message: "${X} is not defined", Fix: "define X"}}
	r.Add(c)
	b.Reset()
	_ = WriteText(&b, r)
	if !strings.Contains(b.String(), "      FAIL  [undefined] d.json:5: ${X} is not defined\n            3 occurrence(s) on line(s) 5, 6, 7\n            fix: define X\n") {
		t.Fatalf("text report:\n%s", b.String())
	}
}

// Advisories beyond the first few blocks of a detector are counted, not
// written (issue #45: a passing repository on one screen); failures are
// always written in full; one block more than the cap is written, not
// counted (the count's line would take its place).
func TestWriteTextCapsAdvisories(t *testing.T) {
	for _, tc := range []struct {
		advisories int
		rest       string // "": every advisory written
	}{
		{advisories: maxNamed},
		{advisories: maxNamed + 1},
		{advisories: maxNamed + 2, rest: "WARN  [literal] and 2 more block(s) like these (2 finding(s)); --verbose lists each\n"},
		{advisories: maxNamed + 4, rest: "WARN  [literal] and 4 more block(s) like these (4 finding(s)); --verbose lists each\n"},
	} {
		c := Check{ID: "check.substitution", Phase: "static", Stage: Before, Verdict: Fail, Message: "m"}
		for i := range tc.advisories {
			c.Findings = append(c.Findings,
				Finding{Detector: "literal", Verdict: Warn, File: "a.yaml", Line: i + 1, Message: fmt.Sprintf("advisory %d", i)},
				Finding{Detector: "undefined", Verdict: Fail, File: "b.yaml", Line: i + 1, Message: fmt.Sprintf("defect %d", i)})
		}
		r := NewReport("check")
		r.Add(c)
		var b strings.Builder
		if err := WriteText(&b, r); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		for i := range tc.advisories {
			if !strings.Contains(out, fmt.Sprintf("defect %d", i)) {
				t.Errorf("%d advisories: failure %d not written:\n%s", tc.advisories, i, out)
			}
			want := tc.rest == "" || i < maxNamed
			if got := strings.Contains(out, fmt.Sprintf("advisory %d", i)); got != want {
				t.Errorf("%d advisories: advisory %d written: %v, want %v:\n%s", tc.advisories, i, got, want, out)
			}
		}
		if tc.rest == "" && strings.Contains(out, "more block(s)") || tc.rest != "" && !strings.Contains(out, tc.rest) {
			t.Errorf("%d advisories: want count line %q:\n%s", tc.advisories, tc.rest, out)
		}
	}
}

// An optional check that did not run (a dry run's after-gate) is written
// SKIP, not PASS, though it leaves the run's verdict alone.
func TestWriteTextOptionalSkip(t *testing.T) {
	r := NewReport("up")
	r.Add(Check{ID: "sync.root", Phase: "sync", Stage: Before, Verdict: Pass, Message: "ok"},
		Check{ID: "sync.applied", Phase: "sync", Stage: After, Verdict: Skip, Optional: true, Message: "dry run: nothing was applied"})
	var b strings.Builder
	if err := WriteText(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "SKIP  sync/after  sync.applied: dry run: nothing was applied") {
		t.Errorf("optional skip not written as SKIP:\n%s", b.String())
	}
	if r.Verdict() != Pass {
		t.Errorf("verdict %s, want pass", r.Verdict())
	}
}

// TestTally: one count decides a phase's verdict, the run's and Blocks;
// an unknown verdict is a failure everywhere, an optional skip nowhere.
func TestTally(t *testing.T) {
	tests := []struct {
		name   string
		checks []Check
		want   Verdict
		blocks bool
	}{
		{"empty", nil, Pass, false},
		{"pass", []Check{{Verdict: Pass}}, Pass, false},
		{"warn", []Check{{Verdict: Pass}, {Verdict: Warn}}, Warn, false},
		{"optional skip", []Check{{Verdict: Pass}, {Verdict: Skip, Optional: true}}, Pass, false},
		{"required skip", []Check{{Verdict: Warn}, {Verdict: Skip}}, Skip, true},
		{"fail wins", []Check{{Verdict: Skip}, {Verdict: Fail}}, Fail, true},
		{"unknown verdict", []Check{{Verdict: "maybe"}}, Fail, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TallyOf(tt.checks...).Verdict(); got != tt.want {
				t.Errorf("Tally verdict %s, want %s", got, tt.want)
			}
			if got := Blocks(tt.checks...); got != tt.blocks {
				t.Errorf("Blocks %v, want %v", got, tt.blocks)
			}
			r := NewReport("t")
			for i, c := range tt.checks {
				c.Phase, c.ID = "p", string(rune('a'+i))
				r.Add(c)
			}
			if got := r.Verdict(); got != tt.want {
				t.Errorf("Report.Verdict %s, want %s", got, tt.want)
			}
			if ps := r.Phases(); len(tt.checks) > 0 && (len(ps) != 1 || ps[0].Verdict != tt.want) {
				t.Errorf("Phases %+v, want one phase %s", ps, tt.want)
			}
		})
	}
}
