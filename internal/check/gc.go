package check

import (
	"os"
	"runtime/debug"
	"sync"
)

// checkGCPercent is the garbage collector's target while a check runs: a
// check allocates several times its live heap (each object written as
// YAML and read back by kustomize and the controller's substitution), so
// Go's default of 100 has the collector run about a fifth of the CPU time.
// At 200 it runs half as often, on every repository: no memory limit is
// set, because a soft limit below a large repository's heap would make the
// collector run more often than the default, not less (docs/benchmarks.md,
// issue 45 item 10). The peak RSS grows by up to a half.
const checkGCPercent = 200

var gcTune struct {
	mu     sync.Mutex
	runs   int // checks running (a server may run several at once)
	before int
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
	}
	gcTune.runs++
	return func() {
		gcTune.mu.Lock()
		defer gcTune.mu.Unlock()
		gcTune.runs--
		if gcTune.runs == 0 {
			debug.SetGCPercent(gcTune.before)
		}
	}
}
