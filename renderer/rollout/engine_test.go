package rollout

import (
	"fmt"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/labels"
)

var t0 = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

// targets are n members named t01.. with site labels north/south.
func targets(n int) []Member {
	out := make([]Member, n)
	for i := range out {
		site := "north"
		if i%2 == 1 {
			site = "south"
		}
		out[i] = Member{Name: fmt.Sprintf("alpha/t%02d", i+1), Labels: map[string]string{"site": site}}
	}
	return out
}

// threeWaves is the policy: one canary, a third, the rest.
func threeWaves() Policy {
	return Policy{Waves: []Wave{{Name: "canary", Count: 1}, {Name: "third", Percent: 34}, {Name: "rest"}}}
}

// states counts the members per state.
func states(d Decision) map[string]int {
	out := map[string]int{}
	for _, m := range d.Members {
		out[m.State]++
	}
	return out
}

// with is members with the named ones at health h.
func with(members []Member, h int, names ...string) []Member {
	out := append([]Member(nil), members...)
	for i := range out {
		for _, n := range names {
			if out[i].Name == n {
				out[i].Health = h
			}
		}
	}
	return out
}

// admitted are the names of the members a decision gives the revision.
func admitted(d Decision) []string {
	var out []string
	for _, m := range d.Members {
		if m.State != Held && m.State != Reverted {
			out = append(out, m.Name)
		}
	}
	return out
}

func TestStartAssignsWavesInOrder(t *testing.T) {
	st := Start(threeWaves(), "r1", targets(12))
	require.Len(t, st.Waves, 3)
	assert.Equal(t, []string{"alpha/t01"}, st.Waves[0].Members, "the canary is the first by name")
	assert.Len(t, st.Waves[1].Members, 4, "34% of the 11 left, rounded up")
	assert.Len(t, st.Waves[2].Members, 7, "the rest")

	bySite := Policy{Waves: []Wave{{Name: "north", Selector: labels.SelectorFromSet(labels.Set{"site": "north"})}, {Name: "two", Count: 2}}}
	st = Start(bySite, "r1", targets(6))
	assert.Equal(t, []string{"alpha/t01", "alpha/t03", "alpha/t05"}, st.Waves[0].Members)
	assert.Equal(t, []string{"alpha/t02", "alpha/t04", "alpha/t06"}, st.Waves[1].Members, "what no wave takes joins the last")
}

func TestGoodChangePassesWaveByWave(t *testing.T) {
	p, members := threeWaves(), targets(12)
	st := Start(p, "r1", members)
	st, d := Next(p, st, members, t0)
	assert.Equal(t, Progressing, d.Phase)
	assert.Equal(t, []string{"alpha/t01"}, admitted(d), "only the canary")
	assert.Equal(t, t0.Add(DefaultProgressDeadline), d.Wake, "look again at the canary's deadline")

	st, d = Next(p, st, members, t0.Add(time.Minute))
	assert.Equal(t, []string{"alpha/t01"}, admitted(d), "nothing passes on a timer")

	members = with(members, Healthy, "alpha/t01")
	st, d = Next(p, st, members, t0.Add(2*time.Minute))
	assert.Equal(t, map[string]int{Passed: 1, Admitted: 4, Held: 7}, states(d), "the canary passed: the third starts")

	members = with(members, Healthy, st.Waves[1].Members...)
	st, d = Next(p, st, members, t0.Add(3*time.Minute))
	assert.Equal(t, map[string]int{Passed: 5, Admitted: 7}, states(d))

	members = with(members, Healthy, st.Waves[2].Members...)
	_, d = Next(p, st, members, t0.Add(4*time.Minute))
	assert.Equal(t, Done, d.Phase)
	assert.Equal(t, map[string]int{Passed: 12}, states(d))
}

func TestBadCanaryHaltsOrRollsBack(t *testing.T) {
	for _, rollBack := range []bool{false, true} {
		p, members := threeWaves(), targets(12)
		p.RollBack = rollBack
		st := Start(p, "r1", members)
		st, _ = Next(p, st, members, t0)
		members[0].Message = "Deployment/web status: 'InProgress'"
		st, d := Next(p, st, members, t0.Add(DefaultProgressDeadline-time.Second))
		require.Equal(t, Progressing, d.Phase, "before its deadline the canary may still pass")

		st, d = Next(p, st, members, t0.Add(DefaultProgressDeadline))
		if rollBack {
			assert.Equal(t, RolledBack, d.Phase)
			assert.Equal(t, map[string]int{Reverted: 1, Held: 11}, states(d))
		} else {
			assert.Equal(t, Halted, d.Phase)
			assert.Equal(t, map[string]int{Failed: 1, Held: 11}, states(d))
			assert.Contains(t, d.Members[0].Reason, "not healthy within the progressDeadline 10m0s: Deployment/web status: 'InProgress'")
		}
		assert.Contains(t, d.Message, "wave canary failed: 1 of 1 members failed, 0 allowed")

		members = with(members, Healthy, "alpha/t01")
		_, again := Next(p, st, members, t0.Add(time.Hour))
		assert.Equal(t, d.Phase, again.Phase, "a failed rollout admits nothing more, whatever comes later")
		assert.Equal(t, admitted(d), admitted(again))
	}
}

func TestBrokenAndStaleFailBeforeTheDeadline(t *testing.T) {
	for _, h := range []int{Broken, Silent} {
		p, members := threeWaves(), targets(3)
		st, _ := Next(p, Start(p, "r1", members), members, t0)
		members = with(members, h, "alpha/t01")
		_, d := Next(p, st, members, t0.Add(time.Second))
		assert.Equal(t, Halted, d.Phase, "health %d", h)
	}
}

func TestThresholds(t *testing.T) {
	one, seventyFive := 25, 75
	p := Policy{Waves: []Wave{{Name: "four", Count: 4, ErrorThreshold: &one, SuccessThreshold: &seventyFive}, {Name: "rest"}}}
	members := targets(6)
	st, _ := Next(p, Start(p, "r1", members), members, t0)
	members = with(members, Broken, "alpha/t01")
	members = with(members, Healthy, "alpha/t02", "alpha/t03")
	st, d := Next(p, st, members, t0.Add(time.Second))
	assert.Equal(t, Progressing, d.Phase, "one failure of four is allowed; two passes of the three needed")
	assert.Equal(t, 4, len(admitted(d)))
	members = with(members, Healthy, "alpha/t04")
	_, d = Next(p, st, members, t0.Add(2*time.Second))
	assert.Equal(t, 6, len(admitted(d)), "three of four passed: the wave passed, the rest starts")

	members = with(targets(6), Broken, "alpha/t01", "alpha/t02")
	st, _ = Next(p, Start(p, "r1", members), targets(6), t0)
	_, d = Next(p, st, members, t0.Add(time.Second))
	assert.Equal(t, Halted, d.Phase, "two failures of four are past 25%")
}

func TestPauseApprovalAndHand(t *testing.T) {
	p := Policy{Waves: []Wave{{Name: "canary", Count: 1, Pause: 5 * time.Minute, Approval: true}, {Name: "rest"}}}
	members := with(targets(3), Healthy, "alpha/t01")
	st, _ := Next(p, Start(p, "r1", members), members, t0)
	st, d := Next(p, st, members, t0.Add(time.Minute))
	assert.Equal(t, Waiting, d.Phase)
	assert.Equal(t, t0.Add(6*time.Minute), d.Wake, "the pause ends 5 minutes after the wave passed")
	st, d = Next(p, st, members, t0.Add(7*time.Minute))
	assert.Equal(t, Waiting, d.Phase)
	assert.Contains(t, d.Message, "waits for approval")
	assert.Len(t, admitted(d), 1)

	st.Approved = append(st.Approved, "canary")
	st.Paused = true
	st, d = Next(p, st, members, t0.Add(8*time.Minute))
	assert.Equal(t, Paused, d.Phase)
	assert.Len(t, admitted(d), 1, "paused: nothing new starts")

	st.Paused = false
	st, d = Next(p, st, members, t0.Add(9*time.Minute))
	assert.Len(t, admitted(d), 3, "resumed and approved: the rest starts")

	st.Aborted = true
	st, d = Next(p, st, with(members, Healthy, "alpha/t02", "alpha/t03"), t0.Add(10*time.Minute))
	assert.Equal(t, Aborted, d.Phase)
	assert.Len(t, admitted(d), 3, "abort holds every member where it is")

	st.Undo = true
	_, d = Next(p, st, members, t0.Add(11*time.Minute))
	assert.Equal(t, RolledBack, d.Phase)
	assert.Equal(t, map[string]int{Reverted: 3}, states(d), "undo rolls every admitted member back")
}

func TestWindows(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	sched, err := cron.ParseStandard("0 22 * * *")
	require.NoError(t, err)
	sched.(*cron.SpecSchedule).Location = berlin
	p := threeWaves()
	p.Windows = []Window{{Spec: "0 22 * * * Europe/Berlin for 4h", Schedule: sched, Duration: 4 * time.Hour}}
	members := targets(3)
	st := Start(p, "r1", members)
	st, d := Next(p, st, members, t0) // 11:00 in Berlin
	assert.Equal(t, Waiting, d.Phase)
	assert.Empty(t, admitted(d), "outside the window nothing starts")
	opens := time.Date(2026, 12, 7, 22, 0, 0, 0, berlin)
	assert.True(t, d.Wake.Equal(opens), "look again when the window opens: %s", d.Wake)
	_, d = Next(p, st, members, opens.Add(3*time.Hour))
	assert.Equal(t, []string{"alpha/t01"}, admitted(d), "inside the window the canary starts")
	_, d = Next(p, st, members, opens.Add(4*time.Hour))
	assert.Empty(t, admitted(d), "the window closed after its 4 hours")
}

func TestNextChangesNotItsInput(t *testing.T) {
	p, members := threeWaves(), with(targets(4), Healthy, "alpha/t01")
	st, _ := Next(p, Start(p, "r1", members), members, t0)
	before := st.clone()
	Next(p, st, members, t0.Add(time.Minute))
	assert.Equal(t, before, st)
}

// TestAWaveThatCannotPassFails: with a tolerated failure and the default
// success threshold a wave can no longer pass: it fails at once instead of
// waiting forever (review finding 1.2).
func TestAWaveThatCannotPassFails(t *testing.T) {
	half := 50
	p := Policy{Waves: []Wave{{Name: "two", Count: 2, ErrorThreshold: &half}, {Name: "rest"}}}
	members := targets(3)
	st, _ := Next(p, Start(p, "r1", members), members, t0)
	members = with(members, Broken, "alpha/t01")
	members = with(members, Healthy, "alpha/t02")
	_, d := Next(p, st, members, t0.Add(time.Second))
	assert.Equal(t, Halted, d.Phase, d.Message)
	assert.Contains(t, d.Message, "2 must pass (successThreshold)")
}

// TestNoMemberIsDone: a rollout of no member (nothing changed) is done at
// once, not waiting for an approval after an empty wave (finding 1.5).
func TestNoMemberIsDone(t *testing.T) {
	p := Policy{Waves: []Wave{{Name: "canary", Count: 1, Approval: true}, {Name: "rest"}}}
	_, d := Next(p, Start(p, "r1", nil), nil, t0)
	assert.Equal(t, Done, d.Phase)
}

// TestAWindowThatNeverOpens: a schedule that never fires (30 February)
// keeps its window closed (finding 1.6: it was open always).
func TestAWindowThatNeverOpens(t *testing.T) {
	sched, err := cron.ParseStandard("0 0 30 2 *")
	require.NoError(t, err)
	p := threeWaves()
	p.Windows = []Window{{Spec: "never", Schedule: sched, Duration: time.Hour}}
	members := targets(3)
	_, d := Next(p, Start(p, "r1", members), members, t0)
	assert.Equal(t, Waiting, d.Phase)
	assert.Empty(t, admitted(d))
	assert.True(t, d.Wake.IsZero(), "no opening to wake at")
}
