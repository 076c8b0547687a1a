package check

import (
	"math"
	"os"
	"runtime/debug"
	"sync"
)

// checkGCPercent is the garbage collector's target while a check runs: a
// check allocates several times its live heap (each object written as
// YAML and read back by kustomize and the controller's substitution), so
// Go's default of 100 has the collector run about a fifth of the CPU time.
// At 300 it runs a third as often; the peak RSS grows by about half, so
// a soft memory limit keeps a large repository's check under the 300 MiB
// peak RSS target: near it the collector runs as often as it needs
// (docs/benchmarks.md, issue 45 item 10).
const (
	checkGCPercent   = 300
	checkMemoryLimit = 200 << 20
)

var gcTune struct {
	mu     sync.Mutex
	runs   int // checks running (a server may run several at once)
	before int
	limit  int64 // the memory limit before; -1: left as it was
}

// tuneGC raises the collector's target for a check and returns what puts
// it back, once the last check running ends. A GOGC in the environment is
// the user's choice: left as it is.
func tuneGC() func() {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	gcTune.mu.Lock()
	defer gcTune.mu.Unlock()
	if gcTune.runs == 0 {
		gcTune.before = debug.SetGCPercent(checkGCPercent)
		gcTune.limit = -1
		if _, set := os.LookupEnv("GOMEMLIMIT"); !set && debug.SetMemoryLimit(-1) == math.MaxInt64 {
			gcTune.limit = debug.SetMemoryLimit(checkMemoryLimit)
		}
	}
	gcTune.runs++
	return func() {
		gcTune.mu.Lock()
		defer gcTune.mu.Unlock()
		gcTune.runs--
		if gcTune.runs == 0 {
			debug.SetGCPercent(gcTune.before)
			if gcTune.limit >= 0 {
				debug.SetMemoryLimit(gcTune.limit)
			}
		}
	}
}
