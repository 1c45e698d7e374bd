package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// ShardOf is the shard of namespace ns among n (--shards): a hash of its
// name, so every replica agrees without asking.
func ShardOf(ns string, n int) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(ns))
	return int(h.Sum32() % uint32(n))
}

// shards elect, per shard, one leader among the replicas with a Lease
// (ID-shard-I): every replica campaigns for every shard, and reconciles the
// namespaces of the shards it leads. A replica takes a free shard at once
// while it leads fewer than its share, ceil(shards / live replicas); beyond
// it, only once the shard has had no leader for a lease duration. A
// replica that leads more than its share (another one started) lets the
// extra shards go. The live replicas are counted from their own Leases
// (ID-replica-HASH), which each renews every retry period.
type shards struct {
	n        int
	id       string
	opts     Options
	leases   kubernetes.Interface
	cache    client.Reader
	synced   func(context.Context) bool
	enqueue  chan event.GenericEvent
	log      *slog.Logger
	replicas *replicas

	// acquire makes one acquisition at a time: its check of the share and
	// its write of the Lease together.
	acquire sync.Mutex
	mu      sync.Mutex
	led     []bool
	share   int
	stop    []context.CancelFunc // each shard's current elector
	since   []time.Time          // when an acquisition was first held back
}

func newShards(mgr ctrl.Manager, opts Options) (*shards, error) {
	leases, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	s := &shards{n: opts.Shards, id: host + "_" + string(uuid.NewUUID()), opts: opts, leases: leases,
		cache: mgr.GetCache(), synced: mgr.GetCache().WaitForCacheSync, enqueue: make(chan event.GenericEvent),
		log: opts.Log, led: make([]bool, opts.Shards), share: opts.Shards,
		stop: make([]context.CancelFunc, opts.Shards), since: make([]time.Time, opts.Shards)}
	s.replicas = &replicas{s: s, seen: map[string]observed{}}
	return s, nil
}

// leads reports whether this replica reconciles ns.
func (s *shards) leads(ns string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.led[ShardOf(ns, s.n)]
}

// Start campaigns until ctx ends (a manager Runnable, on every replica).
func (s *shards) Start(ctx context.Context) error {
	if !s.synced(ctx) {
		return ctx.Err()
	}
	var wg sync.WaitGroup
	wg.Go(func() { s.replicas.run(ctx, s.rebalance) })
	// A lease duration to count the replicas first: replicas started
	// together then each take their share, none takes all to give back.
	select {
	case <-ctx.Done():
	case <-time.After(s.opts.LeaseDuration):
		for i := range s.n {
			wg.Go(func() { s.campaign(ctx, i) })
		}
	}
	wg.Wait()
	return nil
}

// NeedLeaderElection: shards run on every replica, without the manager's
// Lease.
func (s *shards) NeedLeaderElection() bool { return false }

// campaign runs shard i's elector, again after each loss, until ctx ends.
func (s *shards) campaign(ctx context.Context, i int) {
	logger := logr.FromSlogHandler(quietGated{s.log.Handler()})
	for ctx.Err() == nil {
		ectx, cancel := context.WithCancel(klog.NewContext(ctx, logger))
		s.mu.Lock()
		s.stop[i] = cancel
		s.mu.Unlock()
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &gate{Interface: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Name: fmt.Sprintf("%s-shard-%d", s.opts.LeaderElectionID, i), Namespace: s.opts.LeaderElectionNamespace},
				Client:     s.leases.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: s.id},
			}, s: s, shard: i},
			LeaseDuration: s.opts.LeaseDuration, RenewDeadline: s.opts.RenewDeadline, RetryPeriod: s.opts.RetryPeriod,
			ReleaseOnCancel: true, Name: fmt.Sprintf("shard %d", i),
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) { s.started(ctx, i) },
				OnStoppedLeading: func() { s.stopped(i) },
			},
		})
		if err != nil {
			s.log.Error("shard election", "shard", i, "error", err)
			cancel()
			return
		}
		le.Run(ectx)
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(s.opts.RetryPeriod):
		}
	}
}

// started enqueues every namespace of shard i: runs skipped before run now.
func (s *shards) started(ctx context.Context, i int) {
	s.mu.Lock()
	s.led[i] = true
	s.mu.Unlock()
	s.log.Info("leading shard", "shard", i, "of", s.n, "identity", s.id)
	var list corev1.NamespaceList
	if err := s.cache.List(ctx, &list); err != nil {
		s.log.Error("listing the namespaces of a shard", "shard", i, "error", err)
		return
	}
	for k := range list.Items {
		if ShardOf(list.Items[k].Name, s.n) != i {
			continue
		}
		select {
		case s.enqueue <- event.GenericEvent{Object: &list.Items[k]}:
		case <-ctx.Done():
			return
		}
	}
}

// stopped is client-go's OnStoppedLeading, also called when an elector
// that never led stops.
func (s *shards) stopped(i int) {
	s.mu.Lock()
	led := s.led[i]
	s.led[i] = false
	s.mu.Unlock()
	if led {
		s.log.Info("stopped leading shard", "shard", i, "of", s.n)
	}
}

// rebalance sets this replica's share of live replicas, and lets one
// shard beyond it go.
func (s *shards) rebalance(live int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.share = (s.n + live - 1) / max(live, 1)
	led := 0
	for i := range s.led {
		if s.led[i] {
			led++
		}
	}
	for i := s.n - 1; i >= 0 && led > s.share; i-- {
		if s.led[i] && s.stop[i] != nil {
			s.log.Info("letting a shard go: more than its share", "shard", i, "share", s.share, "replicas", live)
			s.stop[i]()
			return
		}
	}
}

// mayTake reports whether this replica may take shard i now: while it
// leads fewer shards than its share, or once the shard has waited a lease
// duration for another replica to take it.
func (s *shards) mayTake(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	led := 0
	for k := range s.led {
		if s.led[k] {
			led++
		}
	}
	if led < s.share {
		s.since[i] = time.Time{}
		return true
	}
	if s.since[i].IsZero() {
		s.since[i] = time.Now()
	}
	return time.Since(s.since[i]) >= s.opts.LeaseDuration
}

// held says shard i's Lease has a live holder: the wait of mayTake starts
// again.
func (s *shards) held(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.since[i] = time.Time{}
}

// gate holds back a replica's acquisition of a shard beyond its share
// (mayTake); a renewal always goes through.
type gate struct {
	resourcelock.Interface
	s       *shards
	shard   int
	holder  string
	renewed time.Time
}

var errHeldBack = errors.New("held back: this replica leads its share of the shards")

func (g *gate) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := g.Interface.Get(ctx)
	if err == nil && (rec.HolderIdentity != g.holder || !rec.RenewTime.Time.Equal(g.renewed)) {
		g.holder, g.renewed = rec.HolderIdentity, rec.RenewTime.Time
		g.s.held(g.shard)
	}
	return rec, raw, err
}

func (g *gate) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return g.take(func() error { return g.Interface.Create(ctx, rec) })
}

func (g *gate) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	write := func() error { return g.Interface.Update(ctx, rec) }
	var err error
	if g.holder == g.Identity() {
		err = write() // a renewal, or the release
	} else {
		err = g.take(write)
	}
	if err == nil {
		g.holder, g.renewed = rec.HolderIdentity, rec.RenewTime.Time
	}
	return err
}

// take writes the Lease to acquire it, when mayTake allows, and counts
// it led at once: two shards' electors never both take the last place of
// the share.
func (g *gate) take(write func() error) error {
	g.s.acquire.Lock()
	defer g.s.acquire.Unlock()
	if !g.s.mayTake(g.shard) {
		return errHeldBack
	}
	if err := write(); err != nil {
		return err
	}
	g.s.mu.Lock()
	g.s.led[g.shard] = true
	g.s.mu.Unlock()
	return nil
}

// quietGated drops client-go's log of an acquisition held back.
type quietGated struct{ slog.Handler }

func (q quietGated) Handle(ctx context.Context, r slog.Record) error {
	gated := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, errHeldBack) {
			gated = true
		}
		return !gated
	})
	if gated {
		return nil
	}
	return q.Handler.Handle(ctx, r)
}

// replicaLeaseName is the Lease of replica id.
func replicaLeaseName(prefix, id string) string {
	sum := sha256.Sum256([]byte(id))
	return prefix + "-replica-" + hex.EncodeToString(sum[:])[:10]
}
