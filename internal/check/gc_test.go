package check

import (
	"os"
	"runtime/debug"
	"testing"
)

func gcPercent() int {
	v := debug.SetGCPercent(100)
	debug.SetGCPercent(v)
	return v
}

// The collector's target is raised while a check runs and put back when
// the last one running ends. Not parallel: the parallel tests run checks.
func TestTuneGCRestores(t *testing.T) {
	if _, set := os.LookupEnv("GOGC"); set {
		t.Skip("GOGC is set: tuneGC leaves the collector alone")
	}
	before := gcPercent()
	done1 := tuneGC()
	if got := gcPercent(); got != checkGCPercent {
		t.Fatalf("during a check: %d, want %d", got, checkGCPercent)
	}
	done2 := tuneGC()
	done1()
	if got := gcPercent(); got != checkGCPercent {
		t.Fatalf("one check still running: %d, want %d", got, checkGCPercent)
	}
	done2()
	if got := gcPercent(); got != before {
		t.Fatalf("after the last check: %d, want %d as before", got, before)
	}
}
