package fleet

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// updateWindow is a DeviceUpgrade's update window, parsed: the devices its
// selector matches start their attempt only from a time its schedule names,
// for its duration.
type updateWindow struct {
	path     string // spec.updateWindows[i], for problems
	selector labels.Selector
	schedule cron.Schedule
	duration time.Duration
}

// updateWindows parses the update windows of a DeviceUpgrade (solar vet
// checked them: an error here names the entry it is in).
func updateWindows(u *model.DeviceUpgrade) ([]updateWindow, error) {
	var out []updateWindow
	for i, w := range u.Spec.UpdateWindows {
		path := load.Index("spec.updateWindows", i)
		parsed, err := parseUpdateWindow(w)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		parsed.path = path
		out = append(out, parsed)
	}
	return out, nil
}

func parseUpdateWindow(w model.UpdateWindow) (updateWindow, error) {
	out := updateWindow{selector: labels.Everything()}
	var err error
	if w.Selector != nil {
		if out.selector, err = metav1.LabelSelectorAsSelector(w.Selector); err != nil {
			return out, fmt.Errorf("selector: %w", err)
		}
	}
	loc := time.UTC
	if w.TimeZone != "" {
		if loc, err = time.LoadLocation(w.TimeZone); err != nil {
			return out, fmt.Errorf("timeZone: %w", err)
		}
	}
	spec, err := cron.ParseStandard(w.Schedule)
	if err != nil {
		return out, fmt.Errorf("schedule: %w", err)
	}
	if s, ok := spec.(*cron.SpecSchedule); ok {
		s.Location = loc
	}
	out.schedule = spec
	// The window's times on the wire are whole seconds.
	if out.duration, err = time.ParseDuration(w.Duration); err != nil || out.duration < time.Second {
		return out, fmt.Errorf("duration: %q is not a Go duration of a second or more", w.Duration)
	}
	return out, nil
}

// windowOf is the window a device with these labels may start its attempt
// in, at now: from the first update window whose selector matches, the
// occurrence open at now (its start and its end), else the next one to
// open; nil when no update window matches (the device starts at once). The
// path is the matching entry's, for problems.
func windowOf(windows []updateWindow, deviceLabels map[string]string, now time.Time) (*wire.Window, string, error) {
	for _, w := range windows {
		if !w.selector.Matches(labels.Set(deviceLabels)) {
			continue
		}
		// The earliest start after now-duration: one at or before now is
		// an occurrence open at now, else it is the next to open.
		start := w.schedule.Next(now.Add(-w.duration))
		if start.IsZero() {
			return nil, w.path, fmt.Errorf("the schedule never fires after %s: the window would never open", now.UTC().Format(time.RFC3339))
		}
		return &wire.Window{
			NotBefore:   start.UTC().Format(time.RFC3339),
			StartBefore: start.Add(w.duration).UTC().Format(time.RFC3339),
		}, w.path, nil
	}
	return nil, "", nil
}

// opensInTime refuses a window that opens at or after notAfter (RFC 3339,
// "" for none): the device would refuse the attempt as expired before it
// could start it.
func opensInTime(w *wire.Window, notAfter string) error {
	if w == nil || notAfter == "" {
		return nil
	}
	end, err := time.Parse(time.RFC3339, notAfter)
	if err != nil {
		return nil // the attempt's own check says so
	}
	if start, err := time.Parse(time.RFC3339, w.NotBefore); err == nil && !start.Before(end) {
		return fmt.Errorf("its window opens at %s, not before spec.notAfter %s: the device would never start the attempt", w.NotBefore, notAfter)
	}
	return nil
}
