package agentlink

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/solar-pipeline/solar/device/wire"
)

// Strict readiness, as the decision record lists it, in its order. Each
// round checks them in turn and stops at the first that does not hold;
// rounds repeat every Link.Retry until all hold, and then Link.Ready is
// called, once:
//
//  1. local dependencies: Link.Dependencies returns nil (every round);
//  2. NATS: the device's connection is connected (every round);
//  3. the complete desired-state snapshot: the watch of attempt.<id>
//     delivered its initial values and the marker that ends them;
//  4. the activation target-version check: when the snapshot's attempt
//     (this device's, genuine) activates this binary, this binary's
//     version is the attempt's target version. An attempt activates the
//     binary whose SHA-256 is its artifact's digest: that is the file the
//     updater installs as versions/<hex>/agent, selects and starts in the
//     transaction, and whose readiness it waits for with that version. A
//     mismatch is never ready: the updater rolls back;
//  5. transaction recovery: Link.Recover returned nil once (the agent's
//     own unfinished work), and the forwarding the cutover interrupted is
//     resumed: the newest genuine attempt has been written to the
//     updater's socket again. Its outcome cannot be waited for: the updater
//     gives the outcome of the transaction that started this binary only
//     after it is ready; the forwarding publishes it then. The link keeps
//     nothing else: the updater's journal keeps the final outcome and gives
//     it again for the same attempt;
//  6. the startup publication: state.<id> carries this agent's version as
//     running (the rest of the value kept, written by compare-and-set),
//     acknowledged by JetStream, once.

// shared is what the watch tells the readiness checks.
type shared struct {
	mu       sync.Mutex
	kv       Store
	complete bool
	current  *wire.Current   // the snapshot's attempt; nil: none
	latest   string          // the UUID of the newest genuine attempt; "": none
	sentUUID map[string]bool // attempts written to the updater
}

func newShared() *shared { return &shared{sentUUID: map[string]bool{}} }

func (s *shared) setBucket(kv Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kv = kv
}

func (s *shared) snapshot(cur *wire.Current) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.complete, s.current = true, cur
}

func (s *shared) newest(cur *wire.Current) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latest = ""
	if cur != nil {
		s.latest = cur.UUID
	}
}

func (s *shared) sent(uuid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sentUUID[uuid] = true
}

// view is a copy of what the checks read.
type view struct {
	kv       Store
	complete bool
	current  *wire.Current
	resumed  bool
	latest   string
}

func (s *shared) view() view {
	s.mu.Lock()
	defer s.mu.Unlock()
	return view{kv: s.kv, complete: s.complete, current: s.current, latest: s.latest,
		resumed: s.latest == "" || s.sentUUID[s.latest]}
}

// becomeReady checks the conditions in rounds until all hold, then calls
// Ready once. Each new reason for not being ready is logged once.
func (l *Link) becomeReady(ctx context.Context, s *shared) {
	var g progress
	last := ""
	for {
		err := l.check(ctx, s, &g)
		if err == nil {
			if err = l.Ready(ctx); err == nil {
				l.Log.Info("ready", "version", l.Version)
				return
			}
			err = fmt.Errorf("reporting ready: %w", err)
		}
		if ctx.Err() != nil {
			return
		}
		if msg := err.Error(); msg != last {
			l.Log.Warn("not ready", "err", err)
			last = msg
		}
		if !sleep(ctx, l.Retry) {
			return
		}
	}
}

// progress is what is done once and not again.
type progress struct{ recovered, published bool }

// check is one round of the conditions (the list above); nil: all hold.
func (l *Link) check(ctx context.Context, s *shared, g *progress) error {
	if l.Dependencies != nil {
		if err := l.Dependencies(ctx); err != nil {
			return fmt.Errorf("local dependencies: %w", err)
		}
	}
	if nc := l.Conn; !nc.IsConnected() {
		return fmt.Errorf("NATS: the connection is %s", nc.Status())
	}
	v := s.view()
	if !v.complete {
		return fmt.Errorf("desired state: the snapshot of attempt.%s is not complete", l.DeviceID)
	}
	if c := v.current; c != nil && c.Attempt.Artifact.Digest == l.Digest && c.Attempt.TargetVersion != l.Version {
		return fmt.Errorf("target version: attempt %s activates this binary (%s) as version %q, this binary is %q",
			c.UUID, l.Digest, c.Attempt.TargetVersion, l.Version)
	}
	if !g.recovered && l.Recover != nil {
		if err := l.Recover(ctx); err != nil {
			return fmt.Errorf("recovery: %w", err)
		}
	}
	g.recovered = true
	if !v.resumed {
		return fmt.Errorf("recovery: attempt %s is not forwarded to the updater yet", v.latest)
	}
	if !g.published {
		if err := l.publishRunning(ctx, v.kv); err != nil {
			return fmt.Errorf("startup publication: %w", err)
		}
		g.published = true
	}
	return nil
}

// publishRunning sets Running in state.<id> to this agent's version,
// keeping the rest (the last outcome, a rollback-failed that blocks the
// device), by compare-and-set: a concurrent writer (an outcome, solar
// fleet repair) makes it read and write again.
func (l *Link) publishRunning(ctx context.Context, kv Store) error {
	key, err := wire.StateKey(l.DeviceID)
	if err != nil {
		return err
	}
	for range 5 {
		var st wire.DeviceState
		var rev uint64
		e, err := kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
		case err != nil:
			return fmt.Errorf("reading %s: %w", key, err)
		default:
			rev = e.Revision()
			if json.Unmarshal(e.Value(), &st) != nil {
				st = wire.DeviceState{} // not a state: replaced
			}
		}
		st.Running = l.Version
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = kv.Create(ctx, key, b)
		} else {
			_, err = kv.Update(ctx, key, b, rev)
		}
		if err == nil || !(errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)) {
			return err
		}
	}
	return fmt.Errorf("writing %s: changed by another writer at every try", key)
}

// SelfDigest is the SHA-256 ("sha256:<hex>") of the running executable, read
// through /proc/self/exe: the file this process runs, even if its path was
// replaced since.
func SelfDigest() (string, error) {
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return "", fmt.Errorf("reading this binary: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading this binary: %w", err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
