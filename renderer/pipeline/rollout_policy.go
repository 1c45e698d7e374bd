package pipeline

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/rollout"
)

// rolloutsOf parses the Rollouts of the set (validation has checked them:
// an error here is one validation missed).
func rolloutsOf(set *model.Set) ([]*governing, error) {
	var out []*governing
	for _, r := range set.Rollouts {
		g, err := newGoverning(r)
		if err != nil {
			return nil, fmt.Errorf("Rollout %s/%s: %w", r.Namespace, r.Name, err)
		}
		out = append(out, g)
	}
	return out, nil
}

// newGoverning is Rollout r's policy in the engine's terms.
func newGoverning(r *model.Rollout) (*governing, error) {
	spec, err := json.Marshal(r.Spec)
	if err != nil {
		return nil, err
	}
	sel, err := selector(r.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("spec.selector: %w", err)
	}
	policy, err := policyOf(r.Spec.Waves, r.Spec.Windows)
	if err != nil {
		return nil, fmt.Errorf("spec.%w", err)
	}
	policy.RollBack = r.Spec.OnFailure == "Rollback"
	return &governing{Namespace: r.Namespace, Name: r.Name, spec: string(spec), Policy: policy,
		governs: func(l map[string]string) bool { return sel.Matches(labels.Set(l)) }}, nil
}

// policyOf is the engine's policy of a rollout's waves and windows (it
// halts on a failed wave).
func policyOf(waves []model.RolloutWave, windows []model.RolloutWindow) (rollout.Policy, error) {
	var p rollout.Policy
	for i, w := range waves {
		wave, err := newWave(w)
		if err != nil {
			return p, fmt.Errorf("waves[%d]: %w", i, err)
		}
		p.Waves = append(p.Waves, wave)
	}
	for i, w := range windows {
		window, err := newWindow(w)
		if err != nil {
			return p, fmt.Errorf("windows[%d]: %w", i, err)
		}
		p.Windows = append(p.Windows, window)
	}
	return p, nil
}

func newWave(w model.RolloutWave) (rollout.Wave, error) {
	out := rollout.Wave{Name: w.Name, SuccessThreshold: w.SuccessThreshold, ErrorThreshold: w.ErrorThreshold, Approval: w.Approval}
	var err error
	if w.Selector != nil {
		if out.Selector, err = selector(w.Selector); err != nil {
			return out, fmt.Errorf("selector: %w", err)
		}
	}
	if w.Count != nil {
		out.Count = *w.Count
	}
	if w.Percent != nil {
		out.Percent = *w.Percent
	}
	if out.ProgressDeadline, err = duration(w.ProgressDeadline); err != nil {
		return out, fmt.Errorf("progressDeadline: %w", err)
	}
	if out.Pause, err = duration(w.Pause); err != nil {
		return out, fmt.Errorf("pause: %w", err)
	}
	return out, nil
}

func newWindow(w model.RolloutWindow) (rollout.Window, error) {
	sched, err := cron.ParseStandard(w.Schedule)
	if err != nil {
		return rollout.Window{}, fmt.Errorf("schedule: %w", err)
	}
	loc := time.UTC
	if w.TimeZone != "" {
		if loc, err = time.LoadLocation(w.TimeZone); err != nil {
			return rollout.Window{}, fmt.Errorf("timeZone: %w", err)
		}
	}
	if spec, ok := sched.(*cron.SpecSchedule); ok {
		spec.Location = loc
	}
	d, err := duration(w.Duration)
	if err != nil {
		return rollout.Window{}, fmt.Errorf("duration: %w", err)
	}
	return rollout.Window{Spec: fmt.Sprintf("%q %s for %s", w.Schedule, loc, d), Schedule: sched, Duration: d}, nil
}

// selector is a label selector; nil selects everything.
func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// duration is a Go duration, 0 for "".
func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	return time.ParseDuration(s)
}
