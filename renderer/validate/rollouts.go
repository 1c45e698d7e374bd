package validate

import (
	"fmt"
	"strings"
	"time"

	// Time zones are looked up in Go's own copy of the IANA database: Solar's
	// images hold no zoneinfo, and a Rollout must not be valid on one
	// machine and invalid on another.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// neverBefore is when a schedule is asked for its next start: a fixed time,
// so that a check gives the same answer every day (robfig/cron looks 5 years
// ahead).
var neverBefore = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rollouts reports what the Rollout schema cannot say: a window's cron
// schedule or time zone that does not parse, a wave that takes every Target
// left before the last, two waves of one name, and two Rollouts of one
// namespace that both match a Target of the input (a Target is governed by
// at most one Rollout). A DeviceUpgrade's rollout policy is checked the same
// way, and holds 1 to 20 waves; so are its update windows.
func rollouts(s *model.Set) diag.List {
	var problems diag.List
	for _, r := range s.Rollouts {
		o := s.Loaded(api.KindRollout, r.Namespace, r.Name)
		if api.IsDeviceRollout(r.Name) {
			problems.Errorf(o.File, o.LineOf("metadata.name"), "metadata.name", "%q starts with %q, which names the state of a DeviceUpgrade's rollout: choose another name",
				r.Name, api.DeviceRolloutPrefix)
		}
		problems = append(problems, rolloutPolicy(o, "spec", "Target", r.Spec.Waves, r.Spec.Windows)...)
	}
	for _, u := range s.DeviceUpgrades {
		o := s.Loaded(api.KindDeviceUpgrade, u.Namespace, u.Name)
		if r := u.Spec.Rollout; r != nil {
			if n := len(r.Waves); n < 1 || n > 20 {
				problems.Errorf(o.File, o.LineOf("spec.rollout"), "spec.rollout.waves", "has %d waves; want 1 to 20", n)
			}
			problems = append(problems, rolloutPolicy(o, "spec.rollout", "device", r.Waves, r.Windows)...)
		}
		problems = append(problems, updateWindows(o, u.Spec.UpdateWindows)...)
	}
	return append(problems, overlappingRollouts(s)...)
}

// updateWindows checks a DeviceUpgrade's update windows as a rollout's
// windows are checked, and that each lasts a second or more (the window's
// times on the wire are whole seconds).
func updateWindows(o *load.Object, windows []model.UpdateWindow) diag.List {
	var problems diag.List
	errorf := func(path, format string, args ...any) {
		problems.Errorf(o.File, o.LineOf(path), path, format, args...)
	}
	plain := make([]model.RolloutWindow, len(windows))
	for i, w := range windows {
		plain[i] = w.RolloutWindow
		if d, err := time.ParseDuration(w.Duration); err == nil && d > 0 && d < time.Second {
			at := load.Index("spec.updateWindows", i) + ".duration"
			errorf(at, "%q is shorter than a second: a window's times are whole seconds", w.Duration)
		}
	}
	windowChecks(errorf, "spec.updateWindows", plain)
	return problems
}

// rolloutPolicy checks the waves and windows of a rollout policy at path of o;
// member names what its waves take (Target, device).
func rolloutPolicy(o *load.Object, path, member string, waves []model.RolloutWave, windows []model.RolloutWindow) diag.List {
	var problems diag.List
	errorf := func(path, format string, args ...any) {
		problems.Errorf(o.File, o.LineOf(path), path, format, args...)
	}
	windowChecks(errorf, path+".windows", windows)
	first := map[string]int{} // wave name: its index
	for i, w := range waves {
		at := load.Index(path+".waves", i)
		if j, ok := first[w.Name]; ok {
			errorf(at+".name", "wave %q is %s[%d] too (line %d): wave names are unique within a Rollout",
				w.Name, path+".waves", j, o.LineOf(load.Index(path+".waves", j)))
		} else {
			first[w.Name] = i
		}
		if w.Selector == nil && w.Count == nil && w.Percent == nil && i < len(waves)-1 {
			errorf(at, "wave %q has no selector, count or percent, so it takes every %s left: only the last wave may", w.Name, member)
		}
	}
	return problems
}

// windowChecks reports, at path[i], what the schema cannot say of each
// window: a cron schedule that does not parse, names a time zone, is an
// interval or never fires, and a time zone that is no IANA name.
func windowChecks(errorf func(path, format string, args ...any), path string, windows []model.RolloutWindow) {
	for i, w := range windows {
		at := load.Index(path, i)
		switch {
		case strings.HasPrefix(w.Schedule, "TZ=") || strings.HasPrefix(w.Schedule, "CRON_TZ="):
			errorf(at+".schedule", "%q names a time zone: give it in timeZone", w.Schedule)
		case strings.HasPrefix(w.Schedule, "@every"):
			errorf(at+".schedule", "%q is an interval, not the start of a window: give a cron schedule such as \"0 22 * * 1-5\"", w.Schedule)
		default:
			sched, err := cron.ParseStandard(w.Schedule)
			switch {
			case err != nil:
				errorf(at+".schedule", "%q is not a cron schedule (minute, hour, day of month, month, day of week): %v", w.Schedule, err)
			case sched.Next(neverBefore).IsZero():
				errorf(at+".schedule", "%q never fires: the window would never open", w.Schedule)
			}
		}
		// LoadLocation takes "Local", the machine's zone: valid on one
		// machine, another time on the next.
		if _, err := time.LoadLocation(w.TimeZone); err != nil || w.TimeZone == "Local" {
			errorf(at+".timeZone", "%q is not an IANA time zone name such as Europe/Berlin or UTC", w.TimeZone)
		}
	}
}

// overlappingRollouts reports each pair of Rollouts of one namespace whose
// selectors both match a Target of the input, once, at the Rollout whose name
// sorts second, naming the first such Target and counting the others: one
// problem per pair, not per Target, however large the fleet.
func overlappingRollouts(s *model.Set) diag.List {
	var problems diag.List
	if len(s.Rollouts) < 2 {
		return nil
	}
	type rollout struct {
		*model.Rollout
		sel labels.Selector
	}
	byNamespace := map[string][]rollout{}
	for _, r := range s.Rollouts {
		sel, err := model.Selector(r.Spec.Selector)
		if err != nil {
			continue // the schema reports an invalid selector
		}
		byNamespace[r.Namespace] = append(byNamespace[r.Namespace], rollout{r, sel})
	}
	type pair struct{ a, b *model.Rollout }
	first := map[pair]*model.Target{} // the first Target the pair both match
	more := map[pair]int{}            // and how many more
	var pairs []pair
	for _, t := range s.Targets {
		rs := byNamespace[t.Namespace]
		if len(rs) < 2 {
			continue
		}
		var matching []*model.Rollout
		for _, r := range rs {
			if r.sel.Matches(labels.Set(t.Labels)) {
				matching = append(matching, r.Rollout)
			}
		}
		for i := range matching {
			for _, b := range matching[i+1:] {
				p := pair{matching[i], b}
				if first[p] == nil {
					first[p] = t
					pairs = append(pairs, p)
				} else {
					more[p]++
				}
			}
		}
	}
	for _, p := range pairs {
		a := s.Loaded(api.KindRollout, p.a.Namespace, p.a.Name)
		b := s.Loaded(api.KindRollout, p.b.Namespace, p.b.Name)
		t := first[p]
		path := "spec.selector"
		if p.b.Spec.Selector == nil {
			path = "metadata.name"
		}
		msg := fmt.Sprintf("Rollouts %s/%s (%s) and %s/%s (%s) both match Target %s/%s (%s): a Target is governed by at most one Rollout",
			p.a.Namespace, p.a.Name, a.Pos(), p.b.Namespace, p.b.Name, b.Pos(), t.Namespace, t.Name, s.Loaded(api.KindTarget, t.Namespace, t.Name).Pos())
		switch n := more[p]; n {
		case 0:
		case 1:
			msg += "; they both match 1 more Target"
		default:
			msg += fmt.Sprintf("; they both match %d more Targets", n)
		}
		problems.Errorf(b.File, b.LineOf(path), path, "%s", msg)
	}
	return problems
}
