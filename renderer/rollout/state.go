package rollout

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// The phases of a rollout.
const (
	// Progressing: a wave is under way.
	Progressing = "Progressing"
	// Waiting: the last wave passed and the next waits for its pause, its
	// approval or a window.
	Waiting = "Waiting"
	// Paused: paused by hand; no new wave starts until resumed.
	Paused = "Paused"
	// Halted: a wave failed; nothing more is admitted.
	Halted = "Halted"
	// RolledBack: a wave failed (or undo) and every admitted member goes
	// back to the content it had.
	RolledBack = "RolledBack"
	// Aborted: stopped by hand; every member stays where it is.
	Aborted = "Aborted"
	// Done: every wave passed.
	Done = "Done"
)

// The states of a member.
const (
	// Held: not admitted; it keeps the content it has.
	Held = "Held"
	// Admitted: it gets the revision; its health is awaited.
	Admitted = "Admitted"
	// Passed: it reported healthy at the revision.
	Passed = "Passed"
	// Failed: it failed at the revision.
	Failed = "Failed"
	// Reverted: rolled back to the content it had.
	Reverted = "RolledBack"
)

// What a member's report says of the revision it was admitted to.
const (
	// Pending: not healthy yet (or no report of the revision).
	Pending = iota
	// Healthy: every release Ready at the revision (solar status: Converged).
	Healthy
	// Broken: failed, no retry coming (solar status: Failed).
	Broken
	// Silent: the report is stale (solar status: Stale).
	Silent
)

// Member is one Target or device a rollout governs.
type Member struct {
	Name   string
	Labels map[string]string
	// Health is what its report says of the revision (Pending, Healthy,
	// Broken, Silent), Message why, from the report.
	Health  int
	Message string
}

// State is a rollout's progress, kept between passes (JSON): the waves'
// members fixed at Start, when each wave started and passed, and what the
// operator asked.
type State struct {
	// Revision names the content rolled out.
	Revision string      `json:"revision"`
	Phase    string      `json:"phase"`
	Message  string      `json:"message,omitempty"`
	Waves    []WaveState `json:"waves"`
	// Paused, Aborted and Undo are the operator's (pause/resume, abort,
	// undo); Approved the waves approved.
	Paused   bool     `json:"paused,omitempty"`
	Aborted  bool     `json:"aborted,omitempty"`
	Undo     bool     `json:"undo,omitempty"`
	Approved []string `json:"approved,omitempty"`
}

// WaveState is one wave's members and progress.
type WaveState struct {
	Name    string   `json:"name"`
	Members []string `json:"members"`
	// Started is when its members were admitted, PassedAt when it passed.
	Started  *time.Time `json:"started,omitempty"`
	PassedAt *time.Time `json:"passed,omitempty"`
	// Outcomes are the members that passed or failed, with why.
	Outcomes map[string]Outcome `json:"outcomes,omitempty"`
}

// Outcome is a member's end in its wave.
type Outcome struct {
	State  string    `json:"state"`
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// Start assigns members to the waves of p, in order, for a new revision:
// a wave with a selector takes the members left that match it, one with a
// count or percentage that many of the members left in name order, one with
// neither all that are left. Members no wave takes join the last wave.
func Start(p Policy, revision string, members []Member) State {
	left := make([]Member, len(members))
	copy(left, members)
	slices.SortFunc(left, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	st := State{Revision: revision, Phase: Progressing, Waves: make([]WaveState, len(p.Waves))}
	for i, w := range p.Waves {
		var took []string
		switch {
		case w.Selector != nil:
			rest := left[:0:0]
			for _, m := range left {
				if w.Selector.Matches(labels.Set(m.Labels)) {
					took = append(took, m.Name)
				} else {
					rest = append(rest, m)
				}
			}
			left = rest
		case w.Count > 0 || w.Percent > 0:
			n := w.Count
			if w.Percent > 0 {
				n = max(1, (len(left)*w.Percent+99)/100)
			}
			n = min(n, len(left))
			for _, m := range left[:n] {
				took = append(took, m.Name)
			}
			left = left[n:]
		default:
			for _, m := range left {
				took = append(took, m.Name)
			}
			left = nil
		}
		st.Waves[i] = WaveState{Name: w.Name, Members: took}
	}
	if last := len(st.Waves) - 1; last >= 0 {
		for _, m := range left {
			st.Waves[last].Members = append(st.Waves[last].Members, m.Name)
		}
	}
	return st
}
