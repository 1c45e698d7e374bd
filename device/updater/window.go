package updater

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/solar-pipeline/solar/device/wire"
)

// maxWindowSleep is the longest the wait for a window sleeps before it reads
// the wall clock again: a clock that NTP steps during the wait is followed
// (a timer runs on the monotonic clock).
const maxWindowSleep = time.Minute

// awaitWindow holds an attempt with a window until the window opens, by the
// device's clock (as notAfter is read): at once when it is open, refused
// when its startBefore or its notAfter passed, or when the attempt expires
// before its window opens. While it waits it reports waiting-for-window
// once; nothing is downloaded and nothing journalled, so a stop of the
// updater loses nothing (the agent sends the attempt again) and a newer
// attempt (ctx) ends the wait at once. It returns ctx's error when ctx ends.
func (u *Updater) awaitWindow(ctx context.Context, a wire.Attempt, report func(string, string, error) wire.Outcome) error {
	if a.Window == nil {
		return nil
	}
	notBefore, startBefore, err := a.Window.Times()
	if err != nil {
		return err
	}
	if deadline, err := notAfter(a); err != nil {
		return err
	} else if !deadline.IsZero() && !deadline.After(notBefore) {
		return fmt.Errorf("the attempt expires at %s, before its window opens at %s: not started", a.NotAfter, a.Window.NotBefore)
	}
	waiting := false
	for {
		now := time.Now()
		if !now.Before(startBefore) {
			return fmt.Errorf("the attempt's window closed at %s (it opened at %s): not started", a.Window.StartBefore, a.Window.NotBefore)
		}
		if err := expired(a, now); err != nil {
			return err
		}
		if !now.Before(notBefore) {
			if waiting {
				u.opts.Log.Info("the attempt's window opened", "uuid", a.UUID, "startBefore", a.Window.StartBefore)
			}
			return nil
		}
		if !waiting {
			waiting = true
			in := notBefore.Sub(now).Round(time.Second)
			u.opts.Log.Info("holding the attempt until its window opens", "uuid", a.UUID, "notBefore", a.Window.NotBefore, "in", in)
			report(wire.StateWaitingForWindow, "", fmt.Errorf("the window opens at %s; the attempt starts before %s",
				a.Window.NotBefore, a.Window.StartBefore))
		}
		t := time.NewTimer(min(notBefore.Sub(now), maxWindowSleep))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// runsCommitted says whether attempt a asks for what the device runs
// already: the journal's attempt committed the same binary and version,
// and the agent link still selects that binary.
func (u *Updater) runsCommitted(j Journal, a wire.Attempt) bool {
	if j.Phase != wire.PhaseCommitted || j.Attempt == nil ||
		j.Attempt.Artifact.Digest != a.Artifact.Digest || j.Attempt.TargetVersion != a.TargetVersion {
		return false
	}
	target, err := os.Readlink(u.opts.Paths.Current())
	return err == nil && u.absolute(target) == u.absolute(u.opts.Paths.Binary(a.Artifact.Digest))
}
