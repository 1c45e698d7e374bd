package updater

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Readiness is what a ready agent writes to Paths.Ready.
type Readiness struct {
	Version string `json:"version"`
	PID     int    `json:"pid"`
}

// maxReady bounds the ready file: a version and a pid.
const maxReady = 4 << 10

// MarkReady is called by the agent once it is ready: it writes its version
// and pid to the ready file of the root.
func MarkReady(p Paths, version string) error {
	b, err := json.Marshal(Readiness{Version: version, PID: os.Getpid()})
	if err != nil {
		return err
	}
	return writeFileSync(p.Ready(), b, 0o644)
}

// errNotReady: the agent did not report ready in time.
var errNotReady = errors.New("not ready")

// waitReady waits until the agent running binary reports ready, with
// version when version is not empty. The ready file is the agent's: it is
// read without following links, capped, and its pid counts only when that
// process runs binary.
func (u *Updater) waitReady(ctx context.Context, binary, version string) error {
	ctx, cancel := context.WithTimeout(ctx, u.opts.ReadyTimeout)
	defer cancel()
	p := u.opts.Paths
	last := "nothing"
	for {
		var r Readiness
		b, err := readBeneath(p.Run(), filepath.Base(p.Ready()), maxReady)
		switch {
		case errors.Is(err, os.ErrNotExist):
		case err != nil:
			last = err.Error()
		case json.Unmarshal(b, &r) != nil:
			last = "a ready file that is not JSON"
		default:
			exe, ok := isAgent(p, r.PID, u.agentUID())
			switch {
			case !ok || exe != binary:
				last = fmt.Sprintf("pid %d, which does not run %s", r.PID, binary)
			case version != "" && r.Version != version:
				last = fmt.Sprintf("version %q", r.Version)
			default:
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w within %s (want version %q, the agent reported %s)", errNotReady, u.opts.ReadyTimeout, version, last)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// agentUID is the agent's user, -1 when it runs as the updater's.
func (u *Updater) agentUID() int {
	if u.opts.Credential == nil {
		return -1
	}
	return int(u.opts.Credential.Uid)
}
