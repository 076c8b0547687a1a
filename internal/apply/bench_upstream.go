//go:build bench_upstream_staged

// This file is built only into the binary hack/bench-controllers.sh
// compares the tool with (VS=upstream, go build -tags bench_upstream_staged):
// the staged apply is ssa's own ApplyAllStaged, called as the tool
// configures its ResourceManager, so docs/benchmarks.md can say what the
// fork (applyStaged) saves. BOOTSTRAP_BENCH_WAIT_INTERVAL (a duration) and
// BOOTSTRAP_BENCH_SSA_CONCURRENCY (a count) set upstream's own knobs
// (ApplyOptions.WaitInterval, ResourceManager.SetConcurrency) to measure it
// tuned as well as by default.

package apply

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/fluxcd/pkg/ssa"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func init() { stagedApply = upstreamStaged }

func upstreamStaged(ctx context.Context, cl *Cluster, objs []*unstructured.Unstructured, _ map[string]bool, opts ssa.ApplyOptions, _ time.Duration) (*ssa.ChangeSet, error) {
	if v := os.Getenv("BOOTSTRAP_BENCH_WAIT_INTERVAL"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("BOOTSTRAP_BENCH_WAIT_INTERVAL: %w", err)
		}
		opts.WaitInterval = d
	}
	if v := os.Getenv("BOOTSTRAP_BENCH_SSA_CONCURRENCY"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("BOOTSTRAP_BENCH_SSA_CONCURRENCY: %w", err)
		}
		cl.Manager.SetConcurrency(n)
	}
	return cl.Manager.ApplyAllStaged(ctx, objs, opts)
}
