package check

import (
	"context"
	"os"
	"runtime/debug"
	"testing"

	"github.com/homelab-ops/bootstrap/internal/fluxrepo"
)

// The package's tests and benchmarks run with the collector's target the
// binary sets (cmd/bootstrap main), so BenchmarkCheck measures what a
// user's check costs.
func init() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(GCPercent)
	}
}

// TestRunLeavesGC: Run turns no process-wide knob; the collector's target
// is the process's (cmd/bootstrap main sets GCPercent).
func TestRunLeavesGC(t *testing.T) {
	before := debug.SetGCPercent(57)
	defer debug.SetGCPercent(before)
	if _, err := Run(context.Background(), Options{Options: fluxrepo.Options{Repo: "../../testdata/layouts/instance-patches", Path: "clusters/staging"}}); err != nil {
		t.Fatal(err)
	}
	if v := debug.SetGCPercent(57); v != 57 {
		t.Fatalf("the collector's target is %d after Run, want 57 as set", v)
	}
}
