package main

import (
	"runtime/debug"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/check"
)

func gcPercent() int {
	v := debug.SetGCPercent(100)
	debug.SetGCPercent(v)
	return v
}

// TestTuneGC: the binary raises the collector's target to check.GCPercent,
// and leaves it alone when GOGC is set. Not parallel: it sets the
// process's target.
func TestTuneGC(t *testing.T) {
	before := debug.SetGCPercent(73)
	defer debug.SetGCPercent(before)
	set := func(string) (string, bool) { return "300", true }
	if got := tuneGC(set); got != 73 || gcPercent() != 73 {
		t.Fatalf("GOGC set: tuneGC returned %d, target %d; want 73 left as it was", got, gcPercent())
	}
	unset := func(string) (string, bool) { return "", false }
	if got := tuneGC(unset); got != 73 || gcPercent() != check.GCPercent {
		t.Fatalf("GOGC unset: tuneGC returned %d, target %d; want 73 before, %d after", got, gcPercent(), check.GCPercent)
	}
}
