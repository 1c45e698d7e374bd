package rollout

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkPass10kTargets is one decision pass over 10,000 Targets in 100
// namespaces (a Rollout each of one canary, a third and the rest), the
// observed states given: half the second wave healthy, the rest pending.
// It is the engine's share of a publish; the pass's requests (the state
// read and written, the admitted Targets' reports) are the pipeline's.
func BenchmarkPass10kTargets(b *testing.B) {
	p := threeWaves()
	type ns struct {
		st      State
		members []Member
	}
	namespaces := make([]ns, 100)
	for n := range namespaces {
		members := make([]Member, 100)
		for i := range members {
			members[i] = Member{Name: fmt.Sprintf("ns-%03d/t%03d", n, i), Labels: map[string]string{"site": "north"}}
		}
		st, _ := Next(p, Start(p, "r1", members), members, t0)
		members[0].Health = Healthy
		st, _ = Next(p, st, members, t0.Add(time.Minute))
		for i := range st.Waves[1].Members[:len(st.Waves[1].Members)/2] {
			members[1+i].Health = Healthy
		}
		namespaces[n] = ns{st, members}
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, n := range namespaces {
			Next(p, n.st, n.members, t0.Add(2*time.Minute))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10000, "ns/target")
}
