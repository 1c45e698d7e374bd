package rollout

import (
	"fmt"
	"slices"
	"time"
)

// Decision is what a pass decided: the rollout's phase, and per member
// whether it gets the revision.
type Decision struct {
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	// Members are every member, wave by wave.
	Members []MemberDecision `json:"members"`
	// Wake is when a pass should run again although no report changed (a
	// deadline, the end of a pause, a window opening); zero: on the next
	// report only.
	Wake time.Time `json:"wake,omitzero"`
}

// MemberDecision is one member's state: Held keeps the content it has;
// Admitted, Passed and Failed get the revision; RolledBack gets the content
// it had before the revision again.
type MemberDecision struct {
	Name   string `json:"name"`
	Wave   string `json:"wave"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
}

// Next is one pass of the rollout st of p at now, given what each member's
// report says: the members' outcomes are recorded, the current wave passes
// or fails, and the next wave starts when it may. The returned State is
// st's successor (st is not changed); store it before acting on the
// Decision, so that a pass killed in between admits nothing twice. At one
// instant a second pass changes nothing: a pass may be applied again to the
// state it wrote (two writers of one state do).
func Next(p Policy, st State, members []Member, now time.Time) (State, Decision) {
	st = st.clone()
	health := make(map[string]Member, len(members))
	for _, m := range members {
		health[m.Name] = m
	}
	var wake time.Time
	switch {
	case len(p.Waves) != len(st.Waves):
		st.Phase, st.Message = Halted, fmt.Sprintf("the policy has %d waves, the rollout %d: start it again (Start)", len(p.Waves), len(st.Waves))
	case st.Phase == RolledBack:
	case st.Undo:
		st.Phase, st.Message = RolledBack, "undone by hand: every admitted member goes back"
	case st.Phase == Done || st.Phase == Aborted:
	case st.Aborted:
		st.Phase, st.Message = Aborted, "aborted by hand: every member stays where it is"
	case st.Phase == Halted:
	default:
		wake = st.advance(p, health, now)
	}
	d := st.decide()
	d.Wake = wake
	return st, d
}

// advance records outcomes, judges the current wave and starts the next
// waves while they may start; it returns when to look again.
func (st *State) advance(p Policy, health map[string]Member, now time.Time) time.Time {
	if st.members() == 0 {
		st.Phase, st.Message = Done, "nothing to roll out: no member"
		return time.Time{}
	}
	for i := range st.Waves {
		w, ws := p.Waves[i], &st.Waves[i]
		if ws.Started == nil {
			ok, wake := st.mayStart(p, i, now)
			if !ok {
				return wake
			}
			ws.Started = ptr(now)
		}
		wake := ws.judge(w, health, now)
		if ws.PassedAt != nil {
			continue
		}
		n := len(ws.Members)
		if failed := ws.count(Failed); failed > w.allowed(n) || n-failed < w.needed(n) {
			st.Phase = Halted
			if p.RollBack {
				st.Phase = RolledBack
			}
			st.Message = fmt.Sprintf("wave %s failed: %d of %d members failed, %d allowed (errorThreshold), %d must pass (successThreshold)",
				w.Name, failed, n, w.allowed(n), w.needed(n))
			return time.Time{}
		}
		if ws.count(Passed) >= w.needed(len(ws.Members)) {
			ws.PassedAt = ptr(now)
			continue
		}
		st.Phase = Progressing
		st.Message = fmt.Sprintf("wave %s: %d of %d members passed, %d needed", w.Name, ws.count(Passed), len(ws.Members), w.needed(len(ws.Members)))
		return wake
	}
	st.Phase, st.Message = Done, fmt.Sprintf("every wave passed (%d)", len(st.Waves))
	return time.Time{}
}

// mayStart says whether wave i may start at now (not paused by hand, the
// wave before it passed and its pause and approval are over, a window
// open), and else when to look again.
func (st *State) mayStart(p Policy, i int, now time.Time) (bool, time.Time) {
	if st.Paused {
		st.Phase, st.Message = Paused, fmt.Sprintf("paused by hand before wave %s", p.Waves[i].Name)
		return false, time.Time{}
	}
	if i > 0 {
		prev, ws := p.Waves[i-1], st.Waves[i-1]
		if end := ws.PassedAt.Add(prev.Pause); now.Before(end) {
			st.Phase, st.Message = Waiting, fmt.Sprintf("wave %s passed; wave %s starts after its pause, at %s", prev.Name, p.Waves[i].Name, end.UTC().Format(time.RFC3339))
			return false, end
		}
		if prev.Approval && !slices.Contains(st.Approved, prev.Name) {
			st.Phase, st.Message = Waiting, fmt.Sprintf("wave %s passed; wave %s waits for approval (solar rollout approve)", prev.Name, p.Waves[i].Name)
			return false, time.Time{}
		}
	}
	if ok, next := p.inWindow(now); !ok {
		st.Phase, st.Message = Waiting, fmt.Sprintf("no window is open; wave %s starts when one opens, at %s", p.Waves[i].Name, next.UTC().Format(time.RFC3339))
		if next.IsZero() {
			st.Message = fmt.Sprintf("no window is open, and none ever opens: wave %s cannot start", p.Waves[i].Name)
		}
		return false, next
	}
	return true, time.Time{}
}

// judge records the outcome of each member of the started wave that has
// none yet, and returns the earliest deadline still pending.
func (ws *WaveState) judge(w Wave, health map[string]Member, now time.Time) time.Time {
	deadline := ws.Started.Add(w.deadline())
	if !now.After(*ws.Started) {
		return deadline // admitted this instant: nothing reported of it yet
	}
	var wake time.Time
	for _, name := range ws.Members {
		if _, done := ws.Outcomes[name]; done {
			continue
		}
		m, reported := health[name]
		var o Outcome
		switch {
		case reported && m.Health == Healthy:
			o = Outcome{State: Passed}
		case reported && m.Health == Broken:
			o = Outcome{State: Failed, Reason: "failed: " + m.Message}
		case reported && m.Health == Silent:
			o = Outcome{State: Failed, Reason: "its report is stale: " + m.Message}
		case !now.Before(deadline):
			o = Outcome{State: Failed, Reason: fmt.Sprintf("not healthy within the progressDeadline %s: %s", w.deadline(), or(m.Message, "no report of the revision"))}
		default:
			wake = deadline
			continue
		}
		o.At = now
		if ws.Outcomes == nil {
			ws.Outcomes = map[string]Outcome{}
		}
		ws.Outcomes[name] = o
	}
	return wake
}

// members counts the members of every wave.
func (st *State) members() int {
	n := 0
	for _, ws := range st.Waves {
		n += len(ws.Members)
	}
	return n
}

func (ws WaveState) count(state string) int {
	n := 0
	for _, o := range ws.Outcomes {
		if o.State == state {
			n++
		}
	}
	return n
}

// decide is every member's state under st.
func (st State) decide() Decision {
	d := Decision{Phase: st.Phase, Message: st.Message, Members: []MemberDecision{}}
	for _, ws := range st.Waves {
		for _, name := range ws.Members {
			md := MemberDecision{Name: name, Wave: ws.Name}
			o, judged := ws.Outcomes[name]
			switch {
			case ws.Started == nil:
				md.State, md.Reason = Held, "its wave has not started: "+st.Message
			case st.Phase == RolledBack && judged && o.State == Failed:
				md.State, md.Reason = Reverted, o.Reason+"; rolled back: "+st.Message
			case st.Phase == RolledBack:
				md.State, md.Reason = Reverted, st.Message
			case judged:
				md.State, md.Reason = o.State, o.Reason
			default:
				md.State = Admitted
			}
			d.Members = append(d.Members, md)
		}
	}
	return d
}

// clone is a copy of st that shares nothing mutable with it.
func (st State) clone() State {
	c := st
	c.Approved = slices.Clone(st.Approved)
	c.Waves = make([]WaveState, len(st.Waves))
	for i, ws := range st.Waves {
		ws.Members = slices.Clone(ws.Members)
		if ws.Outcomes != nil {
			o := make(map[string]Outcome, len(ws.Outcomes))
			for k, v := range ws.Outcomes {
				o[k] = v
			}
			ws.Outcomes = o
		}
		c.Waves[i] = ws
	}
	return c
}

func ptr(t time.Time) *time.Time { return &t }

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
