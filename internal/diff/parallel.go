package diff

import (
	"context"
	goruntime "runtime"

	"golang.org/x/sync/errgroup"
)

// eachOf runs f(0) … f(n-1), one per core at a time, and returns the
// first error. The caller keeps order by writing f(i)'s result to slot i.
// The renders, comparisons and values of one Kustomization read only what
// the loads built (the environments' memo takes its own lock), so they
// run side by side.
func eachOf(ctx context.Context, n int, f func(i int) error) error {
	if n == 1 {
		return f(0)
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(goruntime.GOMAXPROCS(0))
	for i := range n {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return f(i)
		})
	}
	return g.Wait()
}
