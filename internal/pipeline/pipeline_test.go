package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// fake is a phase whose gates and outcomes a test sets.
type fake struct {
	name          string
	before, after []verify.Check
	doErr         error
	did, proved   bool
}

func (f *fake) Name() string { return f.name }
func (f *fake) Gates() []verify.Def {
	return []verify.Def{
		{ID: f.name + ".b", Phase: f.name, Stage: verify.Before, Title: "before"},
		{ID: f.name + ".c", Phase: f.name, Stage: verify.Before, Title: "second before"},
		{ID: f.name + ".a", Phase: f.name, Stage: verify.After, Title: "after"},
	}
}
func (f *fake) Before(context.Context, *Run) ([]verify.Check, error) { return f.before, nil }
func (f *fake) Do(context.Context, *Run) error                       { f.did = true; return f.doErr }
func (f *fake) After(context.Context, *Run) []verify.Check           { f.proved = true; return f.after }

func def(phase, id string, s verify.Stage) verify.Def {
	return verify.Def{ID: phase + "." + id, Phase: phase, Stage: s}
}

func verdicts(r *verify.Report) string {
	var b strings.Builder
	for _, c := range r.Checks {
		b.WriteString(c.ID + "=" + string(c.Verdict) + " ")
	}
	return strings.TrimSpace(b.String())
}

func TestStopRule(t *testing.T) {
	pass := func(p string) *fake {
		return &fake{name: p, before: []verify.Check{def(p, "b", verify.Before).Pass("ok"), def(p, "c", verify.Before).Pass("ok")},
			after: []verify.Check{def(p, "a", verify.After).Pass("ok")}}
	}
	tests := []struct {
		name   string
		phases func() []*fake
		dryRun bool
		want   string
		code   int
		err    bool
	}{
		{"all pass", func() []*fake { return []*fake{pass("one"), pass("two")} },
			false, "one.b=pass one.c=pass one.a=pass two.b=pass two.c=pass two.a=pass", 0, false},
		{"a failed before-gate stops its phase and every later one, listing what did not run",
			func() []*fake {
				one := pass("one")
				one.before = []verify.Check{def("one", "b", verify.Before).Fail("broken")}
				return []*fake{one, pass("two")}
			}, false, "one.b=fail one.c=skip one.a=skip two.b=skip two.c=skip two.a=skip", 1, false},
		{"a skipped required before-gate stops too (incomplete, exit 3)",
			func() []*fake {
				one := pass("one")
				one.before = []verify.Check{def("one", "b", verify.Before).Skip("could not read")}
				return []*fake{one, pass("two")}
			}, false, "one.b=skip one.c=skip one.a=skip two.b=skip two.c=skip two.a=skip", 3, false},
		{"a failed after-gate stops the later phases",
			func() []*fake {
				one := pass("one")
				one.after = []verify.Check{def("one", "a", verify.After).Fail("not live")}
				return []*fake{one, pass("two")}
			}, false, "one.b=pass one.c=pass one.a=fail two.b=skip two.c=skip two.a=skip", 1, false},
		{"an error stops everything and is not a gate",
			func() []*fake {
				one := pass("one")
				one.doErr = errors.New("connection lost")
				return []*fake{one, pass("two")}
			}, false, "one.b=pass one.c=pass one.a=skip two.b=skip two.c=skip two.a=skip", 1, true},
		{"a before-gate a phase that ran did not report did not apply: not listed",
			func() []*fake {
				one := pass("one")
				one.before = one.before[:1]
				return []*fake{one}
			}, true, "one.b=pass one.a=skip", 0, false},
		{"a dry run proves nothing: after-gates are optional skips",
			func() []*fake { return []*fake{pass("one")} }, true, "one.b=pass one.c=pass one.a=skip", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fakes := tt.phases()
			var phases []Phase
			for _, f := range fakes {
				phases = append(phases, f)
			}
			run := &Run{Report: verify.NewReport("test"), DryRun: tt.dryRun}
			err := Execute(context.Background(), run, phases...)
			if (err != nil) != tt.err {
				t.Fatalf("error %v, want error %v", err, tt.err)
			}
			if err != nil {
				run.Report.Error = err.Error()
			}
			if got := verdicts(run.Report); got != tt.want {
				t.Errorf("checks\n got %s\nwant %s", got, tt.want)
			}
			// The code is session.Code's (which pipeline cannot import):
			// 0 pass, 1 fail, 3 a required check skipped, by the verdict.
			if v, want := run.Report.Verdict(), map[int]verify.Verdict{0: verify.Pass, 1: verify.Fail, 3: verify.Skip}[tt.code]; v != want {
				t.Errorf("verdict %s, want %s (exit %d)", v, want, tt.code)
			}
			for _, c := range run.Report.Checks {
				if c.Verdict == verify.Skip && !strings.HasPrefix(c.Message, "not run") && !strings.HasPrefix(c.Message, "dry run") && c.Message != "could not read" {
					t.Errorf("%s skipped without saying why: %q", c.ID, c.Message)
				}
			}
			if strings.Contains(tt.want, "two.a=skip") && len(fakes) > 1 && fakes[1].did {
				t.Errorf("phase two ran after phase one stopped")
			}
		})
	}
}

// TestKeepGoing: a read-only run evaluates every phase: a failed after-gate
// does not stop the next phase, but a blocking before-gate still does.
func TestKeepGoing(t *testing.T) {
	mk := func(p string, afterFails, beforeFails bool) *fake {
		f := &fake{name: p, before: []verify.Check{def(p, "b", verify.Before).Pass("ok"), def(p, "c", verify.Before).Pass("ok")},
			after: []verify.Check{def(p, "a", verify.After).Pass("ok")}}
		if afterFails {
			f.after = []verify.Check{def(p, "a", verify.After).Fail("drift")}
		}
		if beforeFails {
			f.before = []verify.Check{def(p, "b", verify.Before).Fail("cannot")}
		}
		return f
	}
	for _, keep := range []bool{true, false} {
		r := verify.NewReport("status")
		two := mk("two", false, false)
		if err := Execute(context.Background(), &Run{Report: r, KeepGoing: keep}, mk("one", true, false), two); err != nil {
			t.Fatal(err)
		}
		if two.proved != keep {
			t.Errorf("KeepGoing %t: phase two ran its after-gates: %t (%s)", keep, two.proved, verdicts(r))
		}
	}
	r := verify.NewReport("status")
	two := mk("two", false, false)
	if err := Execute(context.Background(), &Run{Report: r, KeepGoing: true}, mk("one", false, true), two); err != nil {
		t.Fatal(err)
	}
	if two.did || verdicts(r) != "one.b=fail one.c=skip one.a=skip two.b=skip two.c=skip two.a=skip" {
		t.Errorf("a blocking before-gate must still stop the run: %s", verdicts(r))
	}
}

// readOnly is a fake phase that writes nothing (pipeline.ReadOnly).
type readOnly struct{ fake }

func (*readOnly) ReadOnly() bool { return true }

// TestBeforeWriteWaitsForAWriter: the cluster lock (BeforeWrite), which
// may create the Flux namespace, is taken before the first phase that
// writes — not after a read-only phase's gates — so a refusal by a later
// phase's before-gates leaves the cluster untouched.
func TestBeforeWriteWaitsForAWriter(t *testing.T) {
	pass := func(p string) fake {
		return fake{name: p, before: []verify.Check{def(p, "b", verify.Before).Pass("ok"), def(p, "c", verify.Before).Pass("ok")},
			after: []verify.Check{def(p, "a", verify.After).Pass("ok")}}
	}
	for _, tc := range []struct {
		name   string
		refuse bool // the writer's before-gate fails
		want   int
	}{
		{"a refusal after the read-only phases: no lock", true, 0},
		{"the writer runs: one lock, before it", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			static, inputs := &readOnly{pass("static")}, &readOnly{pass("inputs")}
			w := pass("controllers")
			if tc.refuse {
				w.before[0] = def("controllers", "b", verify.Before).Fail("refused")
			}
			took, staticDone := 0, false
			run := &Run{Report: verify.NewReport("up"), BeforeWrite: func(context.Context) error {
				took++
				staticDone = static.did && inputs.did
				return nil
			}}
			_ = Execute(context.Background(), run, static, inputs, &w)
			if took != tc.want || (took > 0 && !staticDone) {
				t.Errorf("BeforeWrite ran %d time(s) (after the read-only phases: %t), want %d", took, staticDone, tc.want)
			}
		})
	}
}
