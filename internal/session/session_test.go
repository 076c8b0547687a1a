package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"filippo.io/age"

	"github.com/homelab-ops/bootstrap/internal/kube"
	"github.com/homelab-ops/bootstrap/internal/pipeline"
	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestCode is the exit-code policy, row by row of ExitCodes.
func TestCode(t *testing.T) {
	interrupted := func(sig syscall.Signal) error {
		return fmt.Errorf("up: %w", &pipeline.Interrupted{Signal: pipeline.Signal(sig), Phase: "apply", Stage: "do"})
	}
	sigint, cancel := context.WithCancelCause(context.Background())
	cancel(pipeline.Signal(syscall.SIGINT))
	sigterm, cancel2 := context.WithCancelCause(context.Background())
	cancel2(pipeline.Signal(syscall.SIGTERM))
	bg := context.Background()
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		err     error
		code    int
		printed bool
	}{
		{"ok", bg, nil, 0, false},
		{"reported", bg, &ExitError{Code: 3}, 3, false},
		{"failed", bg, errors.New("boom"), 1, true},
		{"input", bg, verify.InputErrorf("bad"), 2, true},
		{"usage", bg, &verify.InputError{Err: errors.New("unknown flag")}, 2, true},
		{"input wrapped", bg, fmt.Errorf("render: %w", verify.InputErrorf("bad")), 2, true},
		{"interrupted by SIGINT", bg, interrupted(syscall.SIGINT), 130, true},
		{"interrupted by SIGTERM", bg, interrupted(syscall.SIGTERM), 143, true},
		{"the signal itself", bg, pipeline.Signal(syscall.SIGTERM), 143, true},
		{"SIGINT", sigint, errors.New("cancelled"), 130, true},
		{"SIGTERM", sigterm, errors.New("cancelled"), 143, true},
		{"input error under a signal stays 2", sigint, verify.InputErrorf("bad"), 2, true},
		{"credential redacted", bg, errors.New("get https://u:pw@git.lan/x"), 1, true},
	} {
		var b bytes.Buffer
		if got := Exit(tc.ctx, tc.err, &b); got != tc.code {
			t.Errorf("%s: exit %d, want %d", tc.name, got, tc.code)
		}
		if (b.Len() > 0) != tc.printed || strings.Contains(b.String(), "pw@") {
			t.Errorf("%s: printed %q", tc.name, b.String())
		}
	}
	seen := map[int]bool{}
	for _, c := range ExitCodes {
		if seen[c.Code] || c.Short == "" || c.Meaning == "" {
			t.Errorf("exit code %d listed twice or without its meaning", c.Code)
		}
		seen[c.Code] = true
	}
	for _, c := range []int{ExitOK, ExitFailed, ExitInput, ExitIncomplete, 130, 143} {
		if !seen[c] {
			t.Errorf("ExitCodes lacks %d", c)
		}
	}
}

// TestCodeOfReport: a report that ran to its end exits by its verdicts
// (pkg/verify's TestVerdict holds the same rows).
func TestCodeOfReport(t *testing.T) {
	tests := []struct {
		name     string
		verdicts []verify.Verdict
		optional bool
		inputErr string
		want     int
	}{
		{"all pass", []verify.Verdict{verify.Pass, verify.Pass}, false, "", ExitOK},
		{"warn is success", []verify.Verdict{verify.Pass, verify.Warn}, false, "", ExitOK},
		{"fail wins", []verify.Verdict{verify.Skip, verify.Fail, verify.Pass}, false, "", ExitFailed},
		{"required skip is incomplete", []verify.Verdict{verify.Pass, verify.Skip}, false, "", ExitIncomplete},
		{"optional skip is fine", []verify.Verdict{verify.Pass, verify.Skip}, true, "", ExitOK},
		{"unknown verdict is never success", []verify.Verdict{"maybe"}, false, "", ExitFailed},
		// A report that stopped with an Error is a failure, as its verdict
		// says (Report.Verdict); the command's exit code for it is the
		// error's own (Session.Fail: 2 for an input error, TestFinishWritesEveryReport).
		{"stopped with an error", nil, false, "bad flag", ExitFailed},
		{"no checks", nil, false, "", ExitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := verify.NewReport("test")
			r.Error = tt.inputErr
			for i, v := range tt.verdicts {
				r.Add(verify.Check{ID: string(rune('a' + i)), Phase: "p", Verdict: v, Optional: tt.optional && v == verify.Skip})
			}
			if got := ReportCode(r); got != tt.want {
				t.Errorf("exit %d, want %d", got, tt.want)
			}
		})
	}
}

// TestFinishWritesEveryReport: one report, on stdout (JSON) and in the
// --report-json and --junit files, redacted; a file that cannot be written
// is exit 2.
func TestFinishWritesEveryReport(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	s := New(&out, &errOut, func(string) string { return "" }, kube.ClusterFlags(func(string) string { return "" }))
	s.Output = Output{Format: "json", ReportJSON: filepath.Join(dir, "r.json"), JUnit: filepath.Join(dir, "r.xml")}
	run := s.NewRun("test", false)
	run.Report.Facts["url"] = "https://u:pw@git.lan/x"
	id, err := age.GenerateX25519Identity() // a fresh key: none is committed
	if err != nil {
		t.Fatal(err)
	}
	run.Report.Facts["key"] = id.String() // redacted without session importing agekey
	err = s.Fail(context.Background(), run.Report, verify.InputErrorf("bad value"))
	var ee *ExitError
	if !errors.As(err, &ee) || ee.Code != 2 {
		t.Fatalf("Fail: %v, want exit 2", err)
	}
	var doc struct {
		Error    string
		ExitCode int
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.Error != "bad value" || doc.ExitCode != 2 || strings.Contains(out.String(), "AGE-SECRET-KEY") {
		t.Fatalf("stdout: %v %+v\n%s", err, doc, out.String())
	}
	for _, f := range []string{"r.json", "r.xml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !strings.Contains(string(b), "bad value") || strings.Contains(string(b), "pw@") || strings.Contains(string(b), "AGE-SECRET-KEY") {
			t.Errorf("%s: %v\n%s", f, err, b)
		}
	}
	s.Output.JUnit = filepath.Join(dir, "missing", "r.xml")
	if err := s.Finish(verify.NewReport("test")); !errors.As(err, &ee) || ee.Code != 2 {
		t.Errorf("unwritable --junit: %v, want exit 2", err)
	}
}

// refusing is a phase whose checks refuse with err.
type refusing struct {
	pipeline.Base
	err error
}

func (refusing) Name() string { return "one" }
func (refusing) Gates() []verify.Def {
	return []verify.Def{{ID: "one.b", Phase: "one", Stage: verify.Before, Title: "before"}}
}
func (p refusing) Before(context.Context, *pipeline.Run) ([]verify.Check, error) { return nil, p.err }

// TestReword: an error that stops a run is said in the command line's
// words (Reword) everywhere it shows: the report's error, its exit code,
// and the reason of the gates that did not run.
func TestReword(t *testing.T) {
	refusal := errors.New("Options.LogLevel refused")
	flag := func(err error) error {
		if errors.Is(err, refusal) {
			return verify.InputErrorf("--log-level refused")
		}
		return err
	}
	for _, tc := range []struct {
		name   string
		reword func(error) error
		err    error
		code   int
		error  string
		why    string
	}{
		{"without Reword: the library's words", nil, refusal, 1, "Options.LogLevel refused", "not run: phase one stopped: Options.LogLevel refused"},
		{"the refusal in the flag's words, an input error", flag, refusal, 2, "--log-level refused", "not run: phase one stopped: input error"},
		{"another error as it is", flag, errors.New("connection lost"), 1, "connection lost", "not run: phase one stopped: connection lost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			s := New(&out, &bytes.Buffer{}, func(string) string { return "" }, kube.ClusterFlags(func(string) string { return "" }))
			s.Output.Format, s.Reword = "json", tc.reword
			var ee *ExitError
			if err := s.Execute(context.Background(), s.NewRun("test", false), refusing{err: tc.err}); !errors.As(err, &ee) || ee.Code != tc.code {
				t.Fatalf("Execute: %v, want exit %d", err, tc.code)
			}
			var doc struct {
				Error  string
				Checks []struct{ ID, Message string }
			}
			if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Error != tc.error || len(doc.Checks) != 1 || doc.Checks[0].Message != tc.why {
				t.Errorf("error %q, checks %+v; want %q and %q", doc.Error, doc.Checks, tc.error, tc.why)
			}
		})
	}
}
