package rollout

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"
)

// TestNeverAdmitsPastThePolicy drives random policies through random
// orders of reports and checks, after every pass, what the engine promises:
// a wave starts only after the wave before it passed (its success threshold
// met, its error threshold not passed) and its pause ended; what was
// admitted stays admitted; after a failure, an abort or a pause nothing
// more is admitted.
func TestNeverAdmitsPastThePolicy(t *testing.T) {
	for seed := range uint64(3000) {
		r := rand.New(rand.NewPCG(seed, 7))
		p := randomPolicy(r)
		members := targets(1 + r.IntN(20))
		st := Start(p, "r1", members)
		now := t0
		prevAdmitted := 0
		for range 40 {
			now = now.Add(time.Duration(r.IntN(300)) * time.Second)
			i := r.IntN(len(members))
			members[i].Health = r.IntN(4)
			switch r.IntN(20) {
			case 0:
				st.Paused = !st.Paused
			case 1:
				st.Approved = append(st.Approved, p.Waves[r.IntN(len(p.Waves))].Name)
			case 2:
				st.Aborted = true
			}
			before := st
			var d Decision
			st, d = Next(p, st, members, now)
			if again, _ := Next(p, st, members, now); !reflect.DeepEqual(again, st) {
				t.Fatalf("seed %d: a second pass at one instant changed the state:\n%+v\n%+v", seed, st, again)
			}
			n := len(admitted(d))
			if d.Phase == RolledBack {
				n = prevAdmitted // reverted members keep their place in the count
			}
			if n < prevAdmitted {
				t.Fatalf("seed %d: admitted fell from %d to %d", seed, prevAdmitted, n)
			}
			if n > prevAdmitted && (before.Phase == Halted || before.Phase == RolledBack || before.Aborted || before.Paused) {
				t.Fatalf("seed %d: admitted %d more in phase %s (paused %v, aborted %v)", seed, n-prevAdmitted, before.Phase, before.Paused, before.Aborted)
			}
			prevAdmitted = n
			checkWaves(t, seed, p, st)
		}
	}
}

// checkWaves checks that every started wave's predecessor passed in time.
func checkWaves(t *testing.T, seed uint64, p Policy, st State) {
	t.Helper()
	for i := 1; i < len(st.Waves); i++ {
		ws, prev := st.Waves[i], st.Waves[i-1]
		if ws.Started == nil {
			continue
		}
		if prev.PassedAt == nil {
			t.Fatalf("seed %d: wave %d started before wave %d passed", seed, i, i-1)
		}
		if ws.Started.Before(prev.PassedAt.Add(p.Waves[i-1].Pause)) {
			t.Fatalf("seed %d: wave %d started during wave %d's pause", seed, i, i-1)
		}
		passed, failed := 0, 0
		for _, o := range prev.Outcomes {
			if o.At.After(*prev.PassedAt) {
				continue
			}
			switch o.State {
			case Passed:
				passed++
			case Failed:
				failed++
			}
		}
		w := p.Waves[i-1]
		if passed < w.needed(len(prev.Members)) || failed > w.allowed(len(prev.Members)) {
			t.Fatalf("seed %d: wave %d passed with %d passed, %d failed of %d", seed, i-1, passed, failed, len(prev.Members))
		}
		if w.Approval && !slices.Contains(st.Approved, w.Name) {
			t.Fatalf("seed %d: wave %d started without wave %d's approval", seed, i, i-1)
		}
	}
}

func randomPolicy(r *rand.Rand) Policy {
	p := Policy{RollBack: r.IntN(2) == 0}
	for i := range 1 + r.IntN(4) {
		w := Wave{Name: string(rune('a' + i)), ProgressDeadline: time.Duration(1+r.IntN(20)) * time.Minute}
		switch r.IntN(3) {
		case 0:
			w.Count = 1 + r.IntN(5)
		case 1:
			w.Percent = 1 + r.IntN(100)
		}
		if r.IntN(2) == 0 {
			s, e := r.IntN(101), r.IntN(101)
			w.SuccessThreshold, w.ErrorThreshold = &s, &e
		}
		w.Pause = time.Duration(r.IntN(3)) * time.Minute
		w.Approval = r.IntN(4) == 0
		p.Waves = append(p.Waves, w)
	}
	return p
}
