// Package settle waits out a registry's settle time: a registry has no
// compare-and-swap, so what a writer wrote is read back only once another
// writer's write, begun at the same moment, would have landed. The wait
// costs nothing but time, and whoever runs the writer may use that time:
// a context made with WhileWaiting says when a wait begins.
package settle

import (
	"context"
	"time"
)

type waitingKey struct{}

// WhileWaiting is ctx, whose Wait calls waiting before each wait of a
// positive duration (from any goroutine that waits with it; waiting must
// be safe for that).
func WhileWaiting(ctx context.Context, waiting func()) context.Context {
	return context.WithValue(ctx, waitingKey{}, waiting)
}

// Wait waits d, or until ctx is done (then its error).
func Wait(ctx context.Context, d time.Duration) error {
	if d <= 0 || ctx.Err() != nil {
		return ctx.Err()
	}
	if waiting, ok := ctx.Value(waitingKey{}).(func()); ok {
		waiting()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
