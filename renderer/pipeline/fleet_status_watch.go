package pipeline

import (
	"context"

	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
)

// WatchFleetStatus reads the devices as FleetStatus does and hands them to
// listed, then watches the bucket and hands a device to changed each time
// its attempt or state changes. It ends when ctx ends once the listing was
// handed on (nil: an interrupted watch is its normal end), when the watch
// fails (the connection to NATS lost, the bucket deleted: fleetkv.StatusWatch)
// or when listed or changed fails.
func WatchFleetStatus(ctx context.Context, n fleetkv.NATS, deviceIDs []string, listed func([]fleet.Status) error, changed func(fleet.Status) error) error {
	n.Mode = fleetkv.MustExist
	bucket, done, err := fleetkv.Connect(ctx, n)
	if err != nil {
		return err
	}
	defer done()
	w, st, err := bucket.WatchStatus(ctx, fleetkv.WatchOptions{}, deviceIDs...)
	if err != nil {
		return err
	}
	defer w.Stop()
	if err := listed(st); err != nil {
		return err
	}
	for {
		s, err := w.Next(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if err := changed(s); err != nil {
			return err
		}
	}
}
