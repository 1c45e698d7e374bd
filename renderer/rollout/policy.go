package rollout

import (
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/labels"
)

// The defaults of a wave's settings.
const (
	DefaultProgressDeadline = 10 * time.Minute
	DefaultSuccessThreshold = 100
	DefaultErrorThreshold   = 0
)

// Policy is a Rollout's spec, parsed.
type Policy struct {
	Waves []Wave
	// Windows, when any, are the only times a new wave starts.
	Windows []Window
	// RollBack: a failed wave rolls back every member admitted to the
	// revision (else it halts only).
	RollBack bool
}

// Wave is one step of a rollout: which members it takes (at most one of
// Selector, Count and Percent; none takes every member left) and when it
// passes.
type Wave struct {
	Name string
	// Selector takes the members left whose labels match.
	Selector labels.Selector
	// Count takes that many of the members left, Percent that share of them
	// (rounded up, at least one).
	Count, Percent int
	// ProgressDeadline is how long after its start a member of the wave has
	// to report healthy (0: DefaultProgressDeadline).
	ProgressDeadline time.Duration
	// SuccessThreshold is the percentage of the wave's members that must
	// pass, ErrorThreshold the percentage that may fail (nil: the defaults).
	SuccessThreshold, ErrorThreshold *int
	// Pause is how long to wait after the wave passed, Approval whether to
	// wait for an approval (both may be set: the later of the two).
	Pause    time.Duration
	Approval bool
}

// Window is a time a new wave may start: from each time Schedule names, for
// Duration, in Location.
type Window struct {
	// Spec is the window as declared, for messages.
	Spec     string
	Schedule cron.Schedule
	Duration time.Duration
}

// open says whether now is inside the window: a start of Schedule in
// (now-Duration, now].
func (w Window) open(now time.Time) bool {
	start := w.Schedule.Next(now.Add(-w.Duration))
	return !start.IsZero() && !start.After(now) // zero: a schedule that never fires
}

// nextOpen is the next time the window opens after now.
func (w Window) nextOpen(now time.Time) time.Time { return w.Schedule.Next(now) }

// inWindow says whether a new wave may start at now, and else when one may.
func (p Policy) inWindow(now time.Time) (bool, time.Time) {
	if len(p.Windows) == 0 {
		return true, time.Time{}
	}
	var next time.Time
	for _, w := range p.Windows {
		if w.open(now) {
			return true, time.Time{}
		}
		if n := w.nextOpen(now); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return false, next
}

func (w Wave) deadline() time.Duration {
	if w.ProgressDeadline <= 0 {
		return DefaultProgressDeadline
	}
	return w.ProgressDeadline
}

// needed is how many of n members must pass, allowed how many may fail.
func (w Wave) needed(n int) int {
	pct := DefaultSuccessThreshold
	if w.SuccessThreshold != nil {
		pct = *w.SuccessThreshold
	}
	return (n*pct + 99) / 100
}

func (w Wave) allowed(n int) int {
	pct := DefaultErrorThreshold
	if w.ErrorThreshold != nil {
		pct = *w.ErrorThreshold
	}
	return n * pct / 100
}
