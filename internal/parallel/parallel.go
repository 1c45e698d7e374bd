// Package parallel runs a bounded number of calls at once.
package parallel

import (
	"cmp"
	"context"

	"golang.org/x/sync/errgroup"
)

// Each runs fn for 0..n-1 on at most limit goroutines (8 when 0) and
// returns the first error; the first error cancels the ctx the others get.
func Each(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(cmp.Or(limit, 8))
	for i := range n {
		g.Go(func() error { return fn(ctx, i) })
	}
	return g.Wait()
}
