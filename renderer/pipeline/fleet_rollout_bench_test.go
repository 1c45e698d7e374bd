package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/store"
)

// BenchmarkDevicePass10k is the device gate of solar fleet apply
// (gateDevices) over one DeviceUpgrade of 10,000 Devices whose rollout has
// three waves (100 devices, 30 % of the rest, the rest), against a real
// nats-server and an OCI layout. Sub-benchmarks, one pass each:
//
//   - start: the rollout starts, its state is written, the canary admitted;
//   - wave1-steady: half the canary reports the version committed, the rest
//     is on its way; nothing new is decided;
//   - wave2-admit: the canary has committed; it passes and wave 2 starts;
//   - wave2-steady: waves 1 and 2 started (3,070 devices), half of wave 2
//     committed; nothing new is decided.
//
// Reported per pass: KV requests (kv-reads, kv-writes: the messages the
// bucket's connection sent, and those the bucket's stream gained) and the
// store's calls (store-reads, store-writes). The state's write waits no
// settle time here; solar fleet apply waits DefaultSettle (500 ms) after it.
func BenchmarkDevicePass10k(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: runs a real nats-server")
	}
	fb := newFleetBench(b, 10000)
	canary := func(name string) []string { return fb.wave(b, name, 0) }

	b.Run("start", func(b *testing.B) {
		fb.loop(b, 0, func(i int) string { return fmt.Sprintf("start-%d", i) })
	})

	kept, held := fb.pass(b, "steady1", 0)
	require.Equal(b, []int{100, 9900}, []int{kept, held}, "the canary admitted")
	fb.report(b, canary("steady1"), 2)
	fb.pass(b, "steady1", 2*time.Minute) // records the outcomes: the steady pass decides nothing new
	b.Run("wave1-steady", func(b *testing.B) {
		fb.loop(b, 2*time.Minute, func(int) string { return "steady1" })
	})

	fb.pass(b, "admit", 0)
	fb.report(b, canary("admit"), 1)
	before := fb.doc(b, "admit")
	b.Run("wave2-admit", func(b *testing.B) {
		fb.loop(b, 2*time.Minute, func(i int) string {
			name := fmt.Sprintf("admit-%d", i)
			fb.seed(b, name, before)
			return name
		})
	})

	fb.pass(b, "steady2", 0)
	fb.report(b, canary("steady2"), 1)
	kept, held = fb.pass(b, "steady2", 2*time.Minute)
	require.Equal(b, []int{3070, 6930}, []int{kept, held}, "wave 2 admitted")
	fb.report(b, fb.wave(b, "steady2", 1), 2)
	fb.pass(b, "steady2", 3*time.Minute)
	b.Run("wave2-steady", func(b *testing.B) {
		fb.loop(b, 3*time.Minute, func(int) string { return "steady2" })
	})
}

// fleetBench is a bucket, a store and the devices of BenchmarkDevicePass10k.
type fleetBench struct {
	// nc is the bucket's connection: each message it sends is a request.
	nc     *nats.Conn
	bucket *fleetkv.Bucket
	// kv and stream are the bucket's on another connection: the devices'
	// reports, and the count of messages written.
	kv      jetstream.KeyValue
	stream  jetstream.Stream
	st      *callCountingStore
	devices []string
	now     time.Time
	// iteration numbers the iterations of every run (-count): each gets
	// its own DeviceUpgrade name where it needs one.
	iteration int
}

const benchNamespace = "fleet"

func newFleetBench(b *testing.B, n int) *fleetBench {
	ctx := context.Background()
	srv := testenv.StartNATS(b)
	nc, js := srv.Connect(b)
	bucket, err := fleetkv.OpenBucket(ctx, js, "fleet", 1, fleetkv.Create, nil)
	require.NoError(b, err)
	_, admin := srv.Connect(b)
	kv, err := admin.KeyValue(ctx, "fleet")
	require.NoError(b, err)
	stream, err := admin.Stream(ctx, "KV_fleet")
	require.NoError(b, err)
	l, err := store.OpenLayout(ctx, filepath.Join(b.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(b, err)
	b.Cleanup(func() { _ = l.Close() })
	fb := &fleetBench{nc: nc, bucket: bucket, kv: kv, stream: stream, st: &callCountingStore{Store: l},
		now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	for i := range n {
		fb.devices = append(fb.devices, fmt.Sprintf("dev-%05d", i))
	}
	return fb
}

// input is the Devices and the DeviceUpgrade name of them, planned.
func (fb *fleetBench) input(name string) (*model.Set, []fleet.Planned) {
	count, percent := 100, 30
	u := &model.DeviceUpgrade{Meta: model.Meta{Namespace: benchNamespace, Name: name}}
	u.Spec.AgentVersion, u.Spec.Artifact = "2.0.0", "registry.example.com/agent:2.0.0"
	u.Spec.Rollout = &model.DeviceRollout{Waves: []model.RolloutWave{
		{Name: "canary", Count: &count}, {Name: "third", Percent: &percent}, {Name: "rest"}}}
	set := &model.Set{DeviceUpgrades: []*model.DeviceUpgrade{u}}
	planned := make([]fleet.Planned, len(fb.devices))
	for i, id := range fb.devices {
		d := &model.Device{Meta: model.Meta{Namespace: benchNamespace, Name: id, Labels: map[string]string{"site": "north"}}}
		d.Spec.DeviceID, d.Spec.Platform = id, "linux/arm64"
		set.Devices = append(set.Devices, d)
		planned[i] = fleet.Planned{Upgrade: benchNamespace + "/" + name, Repository: benchNamespace + "/agent",
			Attempt: wire.Attempt{UUID: fmt.Sprintf("00000000-0000-5000-8000-%012d", i), DeviceID: id,
				TargetVersion: "2.0.0", Artifact: wire.Artifact{Platform: "linux/arm64"}}}
	}
	return set, planned
}

// pass runs the gate once for upgrade name, at after the rollout started:
// the attempts it lets through and those it holds.
func (fb *fleetBench) pass(b *testing.B, name string, at time.Duration) (int, int) {
	set, planned := fb.input(name)
	kept, held, err := gateDevices(context.Background(), set, planned, fb.bucket, fb.st, fb.opts(at))
	require.NoError(b, err)
	return len(kept), len(held)
}

// loop measures passes at after the rollout started, next giving each
// iteration's DeviceUpgrade name (and preparing its state) outside the
// timer, from the iteration's number.
func (fb *fleetBench) loop(b *testing.B, at time.Duration, next func(i int) string) {
	b.ReportAllocs()
	var total passCounts
	for b.Loop() {
		b.StopTimer()
		fb.iteration++
		set, planned := fb.input(next(fb.iteration))
		before := fb.counts(b)
		b.StartTimer()
		_, _, err := gateDevices(context.Background(), set, planned, fb.bucket, fb.st, fb.opts(at))
		b.StopTimer()
		require.NoError(b, err)
		total.add(fb.counts(b).minus(before))
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(total.kvReads)/n, "kv-reads/op")
	b.ReportMetric(float64(total.kvWrites)/n, "kv-writes/op")
	b.ReportMetric(float64(total.storeReads)/n, "store-reads/op")
	b.ReportMetric(float64(total.storeWrites)/n, "store-writes/op")
}

// doc is the rollout state of upgrade name.
func (fb *fleetBench) doc(b *testing.B, name string) *rolloutstore.Doc {
	doc, err := rolloutstore.Read(context.Background(), fb.st, benchNamespace, DeviceRolloutName(name))
	require.NoError(b, err)
	require.NotNil(b, doc)
	return doc
}

// wave is the members of wave i of upgrade name, which has started.
func (fb *fleetBench) wave(b *testing.B, name string, i int) []string {
	ws := fb.doc(b, name).Waves[i]
	require.NotNil(b, ws.Started, "wave %s started", ws.Name)
	return ws.Members
}

// seed writes doc as the rollout state of upgrade name.
func (fb *fleetBench) seed(b *testing.B, name string, doc *rolloutstore.Doc) {
	_, err := rolloutstore.Update(context.Background(), fb.st, benchNamespace, DeviceRolloutName(name),
		func(*rolloutstore.Doc) (*rolloutstore.Doc, error) { c := *doc; return &c, nil }, rolloutstore.Options{})
	require.NoError(b, err)
}

// report has the devices report: every every-th one the version committed,
// the others the candidate starting.
func (fb *fleetBench) report(b *testing.B, devices []string, every int) {
	ctx := context.Background()
	for i, id := range devices {
		s := wire.DeviceState{State: wire.PhaseStarting, Version: "1.0.0"}
		if i%every == 0 {
			s = wire.DeviceState{State: wire.PhaseCommitted, Version: "2.0.0"}
		}
		v, err := json.Marshal(s)
		require.NoError(b, err)
		key, err := wire.StateKey(id)
		require.NoError(b, err)
		_, err = fb.kv.Put(ctx, key, v)
		require.NoError(b, err)
	}
}

// passCounts are the requests of passes.
type passCounts struct{ kvReads, kvWrites, storeReads, storeWrites int64 }

func (c *passCounts) add(d passCounts) {
	c.kvReads += d.kvReads
	c.kvWrites += d.kvWrites
	c.storeReads += d.storeReads
	c.storeWrites += d.storeWrites
}

func (c passCounts) minus(d passCounts) passCounts {
	return passCounts{c.kvReads - d.kvReads, c.kvWrites - d.kvWrites, c.storeReads - d.storeReads, c.storeWrites - d.storeWrites}
}

// counts are the requests so far: kvReads the messages the bucket's
// connection sent, less the bucket's writes.
func (fb *fleetBench) counts(b *testing.B) passCounts {
	info, err := fb.stream.Info(context.Background())
	require.NoError(b, err)
	writes := int64(info.State.LastSeq)
	return passCounts{kvReads: int64(fb.nc.Stats().OutMsgs) - writes, kvWrites: writes,
		storeReads: fb.st.reads.Load(), storeWrites: fb.st.writes.Load()}
}

// callCountingStore counts the calls of its repositories: reads (Fetch,
// Exists, Resolve, Tags) and writes (Push, Tag). A registry answers each
// with at least one request.
type callCountingStore struct {
	store.Store
	reads, writes atomic.Int64
}

func (s *callCountingStore) Repository(ctx context.Context, name string) (store.Repository, error) {
	r, err := s.Store.Repository(ctx, name)
	if err != nil {
		return nil, err
	}
	return &callCountingRepo{Repository: r, s: s}, nil
}

type callCountingRepo struct {
	store.Repository
	s *callCountingStore
}

func (r *callCountingRepo) Fetch(ctx context.Context, d ocispec.Descriptor) (io.ReadCloser, error) {
	r.s.reads.Add(1)
	return r.Repository.Fetch(ctx, d)
}

func (r *callCountingRepo) Exists(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	r.s.reads.Add(1)
	return r.Repository.Exists(ctx, d)
}

func (r *callCountingRepo) Resolve(ctx context.Context, ref string) (ocispec.Descriptor, error) {
	r.s.reads.Add(1)
	return r.Repository.Resolve(ctx, ref)
}

func (r *callCountingRepo) Tags(ctx context.Context, last string, fn func([]string) error) error {
	r.s.reads.Add(1)
	return r.Repository.Tags(ctx, last, fn)
}

func (r *callCountingRepo) Push(ctx context.Context, d ocispec.Descriptor, rd io.Reader) error {
	r.s.writes.Add(1)
	return r.Repository.Push(ctx, d, rd)
}

func (r *callCountingRepo) Tag(ctx context.Context, d ocispec.Descriptor, ref string) error {
	r.s.writes.Add(1)
	return r.Repository.Tag(ctx, d, ref)
}

// opts are those of a pass at after the rollout started.
func (fb *fleetBench) opts(at time.Duration) Options {
	return Options{PublishOptions: PublishOptions{Now: fb.now.Add(at)}}
}
