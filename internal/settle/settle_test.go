package settle

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestWaitSaysWhenItWaits: a wait of a positive duration calls the
// context's hook first; a wait of none does not, nor does a plain context
// need one; a done context ends the wait with its error.
func TestWaitSaysWhenItWaits(t *testing.T) {
	var calls atomic.Int32
	ctx := WhileWaiting(context.Background(), func() { calls.Add(1) })
	require.NoError(t, Wait(ctx, 0))
	require.Zero(t, calls.Load())
	require.NoError(t, Wait(ctx, time.Millisecond))
	require.Equal(t, int32(1), calls.Load())
	require.NoError(t, Wait(context.Background(), time.Millisecond))

	done, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, Wait(done, time.Hour), context.Canceled)
	require.ErrorIs(t, Wait(done, 0), context.Canceled)
}
