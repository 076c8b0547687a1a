package verify

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestSummaryExitCode: the summary line carries the exit code the program
// set; a failed or incomplete report no program gave an exit code (left
// at 0) is never written "exit 0".
func TestSummaryExitCode(t *testing.T) {
	d := Def{ID: "g", Phase: "p", Stage: Before}
	for _, tc := range []struct {
		name  string
		check Check
		err   string
		exit  int
		want  string
	}{
		{"pass, exit 0", d.Pass("ok"), "", 0, "run: PASS (1 pass, 0 fail, 0 warn, 0 skip; exit 0)\n"},
		{"warn, exit 0", d.Warn("hm"), "", 0, "run: WARN (0 pass, 0 fail, 1 warn, 0 skip; exit 0)\n"},
		{"fail, exit set", d.Fail("no"), "", 1, "run: FAIL (0 pass, 1 fail, 0 warn, 0 skip; exit 1)\n"},
		{"fail, exit left 0", d.Fail("no"), "", 0, "run: FAIL (0 pass, 1 fail, 0 warn, 0 skip)\n"},
		{"skip, exit left 0", d.Skip("not run"), "", 0, "run: SKIP (0 pass, 0 fail, 0 warn, 1 skip)\n"},
		{"error, exit left 0", d.Pass("ok"), "refused", 0, "run: FAIL (1 pass, 0 fail, 0 warn, 0 skip)\n"},
		{"error, exit set", d.Pass("ok"), "refused", 2, "run: FAIL (1 pass, 0 fail, 0 warn, 0 skip; exit 2)\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReport("run")
			r.Add(tc.check)
			r.Error, r.ExitCode = tc.err, tc.exit
			for name, write := range map[string]func(*bytes.Buffer, *Report) error{
				"text":    func(b *bytes.Buffer, r *Report) error { return WriteText(b, r) },
				"verbose": func(b *bytes.Buffer, r *Report) error { return WriteVerbose(b, r) },
				"summary": func(b *bytes.Buffer, r *Report) error { return WriteSummary(b, r) },
			} {
				var b bytes.Buffer
				if err := write(&b, r); err != nil {
					t.Fatal(err)
				}
				if !strings.HasSuffix(b.String(), tc.want) {
					t.Errorf("%s: %q, want it to end %q", name, b.String(), tc.want)
				}
			}
		})
	}
}

// TestDurations: a phase's duration is the report's typed Durations,
// written as the phase's duration in JSON, and no fact.
func TestDurations(t *testing.T) {
	r := NewReport("up")
	r.Add(Def{ID: "a", Phase: "static", Stage: Before}.Pass("ok"), Def{ID: "b", Phase: "sync", Stage: Before}.Pass("ok"))
	r.Timed("static", 1500*time.Millisecond)
	ps := r.Phases()
	if len(ps) != 2 || ps[0].Duration != "1.5s" || ps[1].Duration != "" {
		t.Fatalf("phases %+v, want static 1.5s and sync without a duration", ps)
	}
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Facts  map[string]string `json:"facts"`
		Phases []struct {
			Name     string `json:"name"`
			Duration string `json:"duration"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Phases) != 2 || doc.Phases[0].Duration != "1.5s" || len(doc.Facts) != 0 || strings.Contains(b.String(), "Durations") {
		t.Fatalf("JSON %s", b.String())
	}
}
