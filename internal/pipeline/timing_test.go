package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/homelab-ops/bootstrap/pkg/verify"
)

// TestTimed: each phase that ran has its duration in the report's typed
// Durations (rounded to the millisecond), none among the facts; a phase
// the stop rule skipped has none.
func TestTimed(t *testing.T) {
	p := func(n string, v verify.Verdict) *fake {
		c := def(n, "b", verify.Before).Pass("ok")
		c.Verdict = v
		return &fake{name: n, before: []verify.Check{c, def(n, "c", verify.Before).Pass("ok")}, after: []verify.Check{def(n, "a", verify.After).Pass("ok")}}
	}
	clock := time.Unix(0, 0)
	run := &Run{Report: verify.NewReport("t"), Now: func() time.Time { clock = clock.Add(1500*time.Microsecond + 250*time.Millisecond); return clock }}
	_ = Execute(context.Background(), run, p("one", verify.Pass), p("two", verify.Fail), p("three", verify.Pass))
	r := run.Report
	if d, ok := r.Durations["one"]; !ok || d <= 0 || d != d.Round(time.Millisecond) {
		t.Errorf("one: %v %t, want a duration rounded to the millisecond", d, ok)
	}
	if _, ok := r.Durations["two"]; !ok {
		t.Error("two ran (and failed): no duration")
	}
	if d, ok := r.Durations["three"]; ok {
		t.Errorf("three did not run: duration %v", d)
	}
	if len(r.Facts) != 0 {
		t.Errorf("facts %v, want no duration among them", r.Facts)
	}
}
