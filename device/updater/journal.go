package updater

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/killpoint"
)

// Journal is the updater's state on disk: what it was doing, so that a
// restart resumes it.
type Journal struct {
	Phase   string        `json:"phase"`
	Attempt *wire.Attempt `json:"attempt,omitempty"`
	// Previous is what the agent link pointed to before the switch: the
	// binary to go back to ("" when there was none).
	Previous string `json:"previous,omitempty"`
	// Step is the step that failed, for rolled-back and rollback-failed.
	Step string `json:"step,omitempty"`
	// Reason is why that step failed, reported again with the outcome.
	Reason string `json:"reason,omitempty"`
	// Failed are the digests that failed: never retried automatically.
	Failed []string `json:"failed,omitempty"`
	// Tries counts the attempts begun per digest, kills included: capped.
	Tries map[string]int `json:"tries,omitempty"`
	// Blocked: a rollback failed; nothing is accepted until repaired
	// (solar-updater --repair).
	Blocked bool `json:"blocked,omitempty"`
}

// readJournal reads the journal; a missing one is idle.
func readJournal(p Paths) (Journal, error) {
	j := Journal{Phase: wire.PhaseIdle}
	b, err := os.ReadFile(p.Journal())
	if errors.Is(err, os.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return j, fmt.Errorf("reading the journal: %w", err)
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return j, fmt.Errorf("reading the journal %s: %w", p.Journal(), err)
	}
	return j, nil
}

// write saves the journal whole or not at all, durably: a temporary file,
// synced, renamed over the journal, and the folder synced. Kill points
// before and after let the tests stop the process on each side of it.
func (j Journal) write(p Paths) error {
	killpoint.Here("journal-before-" + j.Phase)
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if err := writeFileSync(p.Journal(), b, 0o600); err != nil {
		return fmt.Errorf("writing the journal: %w", err)
	}
	killpoint.Here("journal-after-" + j.Phase)
	return nil
}

// writeFileSync writes name atomically and durably.
func writeFileSync(name string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing there
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return err
	}
	return syncDir(filepath.Dir(name))
}

// syncDir makes the entries of a folder durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// maxReason bounds an outcome's reason: a server's status line, a probe's
// output may be long, and every outcome goes to the bucket.
const maxReason = 1 << 10

func capReason(s string) string {
	if len(s) <= maxReason {
		return s
	}
	return strings.ToValidUTF8(s[:maxReason], "") + "…"
}

// reasonOf is the recorded reason of a final phase, nil when none.
func reasonOf(j Journal) error {
	if j.Reason == "" {
		return nil
	}
	return errors.New(j.Reason)
}
