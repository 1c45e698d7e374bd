package wire

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
)

// The states of an attempt on a device, in the order the updater's
// transaction goes through them (docs/fleet.md): its journal's phases, and
// what a device reports in DeviceState.State and on the socket in
// Outcome.State.
const (
	PhaseIdle           = "idle"
	PhasePreparing      = "preparing"
	PhasePrepared       = "prepared"
	PhaseStopping       = "stopping"  // the old service is being stopped
	PhaseSelected       = "selected"  // the candidate is (being) selected
	PhaseStarting       = "starting"  // the candidate is (being) started
	PhaseCommitted      = "committed" // the candidate reported ready
	PhaseRollingBack    = "rolling-back"
	PhaseRolledBack     = "rolled-back"
	PhaseRollbackFailed = "rollback-failed"
)

// Outcome states the updater reports besides the journal's phases.
const (
	StateSwitching = "switching"
	StateRefused   = "refused"
	// StateDownloadRetrying: a download try failed for a reason that is not
	// the artifact's (the link, TLS, the server, the login); the reason says
	// which, and when the next try is. Not final.
	StateDownloadRetrying = "download-retrying"
	// StateWaitingForWindow: the attempt's window has not opened yet; the
	// updater starts it at the window's notBefore (the reason says when).
	// Nothing is downloaded meanwhile. Not final.
	StateWaitingForWindow = "waiting-for-window"
)

// Final says whether state ends an attempt: no outcome follows it.
func Final(state string) bool {
	return state == PhaseCommitted || state == PhaseRolledBack || state == PhaseRollbackFailed || state == StateRefused
}

// Request is the one message the updater accepts on its socket: an attempt.
// It takes no command.
type Request struct {
	Attempt *Attempt `json:"attempt"`
}

// Outcome is what the updater reports about an attempt on its socket: the
// states of docs/fleet.md (preparing, prepared, switching, committed,
// rolled-back, rollback-failed) or refused, one JSON line each.
type Outcome struct {
	UUID     string `json:"uuid"`
	DeviceID string `json:"deviceId"`
	State    string `json:"state"`
	Version  string `json:"version,omitempty"`
	// Step is the step that failed, for rolled-back and rollback-failed.
	Step   string `json:"step,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Send is the agent's side of the updater's socket: it forwards an attempt
// to the updater at path (the socket the updater listens on) and calls
// outcome for every outcome reported, until the final one. It returns the
// final one.
func Send(ctx context.Context, path string, a Attempt, outcome func(Outcome)) (Outcome, error) {
	return SendNotify(ctx, path, a, nil, outcome)
}

// SendNotify is Send that also calls sent (when not nil) once the attempt
// is written to the updater's connection, before any outcome: the updater
// may hold it until the transaction under way ends (a candidate's link
// resends the attempt that started it, and its readiness waits for that).
func SendNotify(ctx context.Context, path string, a Attempt, sent func(), outcome func(Outcome)) (Outcome, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return Outcome{}, fmt.Errorf("connecting to the updater: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := json.NewEncoder(conn).Encode(Request{Attempt: &a}); err != nil {
		return Outcome{}, fmt.Errorf("sending the attempt: %w", err)
	}
	if sent != nil {
		sent()
	}
	dec := json.NewDecoder(conn)
	var last Outcome
	for {
		var o Outcome
		if err := dec.Decode(&o); err != nil {
			if last.State != "" && Final(last.State) {
				return last, nil
			}
			return last, fmt.Errorf("the updater ended the connection before a final outcome: %w", err)
		}
		last = o
		if outcome != nil {
			outcome(o)
		}
		if Final(o.State) {
			return o, nil
		}
	}
}
