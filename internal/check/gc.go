package check

// GCPercent is the garbage collector's target a process running checks
// sets (cmd/bootstrap's main does, unless GOGC is set: the user's choice):
// a check allocates several times its live heap (each object written as
// YAML and read back by kustomize and the controller's substitution), so
// Go's default of 100 has the collector run about a fifth of the CPU time.
// At 200 it runs half as often, on every repository: no memory limit is
// set, because a soft limit below a large repository's heap would make the
// collector run more often than the default, not less (docs/benchmarks.md,
// issue 45 item 10). The peak RSS grows by up to a half. A library sets no
// process-wide knob: Run leaves the collector as it finds it.
const GCPercent = 200
