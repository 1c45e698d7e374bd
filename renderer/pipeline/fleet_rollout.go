package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/killpoint"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/store"
	"github.com/solar-pipeline/solar/renderer/targetreport"
)

// DeviceRolloutName is the name under which the rollout of DeviceUpgrade
// name keeps its state (solar rollout status deviceupgrade-NAME).
func DeviceRolloutName(upgrade string) string { return api.DeviceRolloutPrefix + upgrade }

// statusReader reads what devices report into the bucket (fleetkv.Bucket):
// their states alone.
type statusReader interface {
	States(ctx context.Context, deviceIDs ...string) ([]fleet.Status, error)
}

// gateDevices admits the planned attempts of each DeviceUpgrade with a
// rollout policy wave by wave: a device whose wave has not started, or of a
// halted rollout, gets no attempt (its result is Held). A device of a
// started wave passes when it reports the upgrade's agentVersion committed,
// fails when it reports rolled-back or rollback-failed, or when it has not
// passed by its wave's progressDeadline. The rollout's state is written,
// and holds, before any attempt is.
func gateDevices(ctx context.Context, set *model.Set, planned []fleet.Planned, bucket statusReader, st store.Store, opts Options) ([]fleet.Planned, []fleet.Result, error) {
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	var held []fleet.Result
	var err error
	for _, u := range set.DeviceUpgrades {
		if u.Spec.Rollout == nil {
			continue
		}
		var out []fleet.Result
		planned, out, err = gateUpgrade(ctx, set, u, planned, bucket, st, opts, now)
		if err != nil {
			return nil, nil, fmt.Errorf("DeviceUpgrade %s/%s: %w", u.Namespace, u.Name, err)
		}
		held = append(held, out...)
	}
	return planned, held, nil
}

// gateUpgrade is gateDevices for one DeviceUpgrade: the planned attempts
// left to apply, and the results of the devices it holds. A new revision
// (the upgrade's spec or its devices changed) starts the rollout again,
// keeping the operator's pause and abort; but a failed rollout holds while
// a device that failed would get the same binary again (stuck).
func gateUpgrade(ctx context.Context, set *model.Set, u *model.DeviceUpgrade, planned []fleet.Planned, bucket statusReader, st store.Store, opts Options, now time.Time) ([]fleet.Planned, []fleet.Result, error) {
	upgrade := u.Namespace + "/" + u.Name
	policy, err := policyOf(u.Spec.Rollout.Waves, u.Spec.Rollout.Windows)
	if err != nil {
		return nil, nil, fmt.Errorf("spec.rollout.%w", err)
	}
	members, binaries := deviceMembers(set, u, upgrade, planned)
	spec, err := json.Marshal(u.Spec)
	if err != nil {
		return nil, nil, err
	}
	ids := slices.Sorted(maps.Keys(binaries))
	revision := digest.FromString(fmt.Sprintf("%s\n%v", spec, ids)).String()
	name := DeviceRolloutName(u.Name)
	cur, err := rolloutstore.Read(ctx, st, u.Namespace, name)
	if err != nil {
		return nil, nil, err
	}
	var fresh *rolloutstore.Doc
	switch {
	case cur != nil && cur.Revision == revision:
	case cur != nil && stuck(cur, binaries):
		revision = cur.Revision // failed on a binary its devices would still get
	default:
		fresh = &rolloutstore.Doc{State: rollout.Start(policy, revision, members), From: map[string]string{}, Keys: binaries}
		if cur != nil {
			fresh.Paused, fresh.Aborted = cur.Paused, cur.Aborted
		}
		cur = fresh
	}
	if err := deviceHealth(ctx, bucket, cur, members, u.Spec.AgentVersion); err != nil {
		return nil, nil, err
	}
	doc, err := rolloutstore.Update(ctx, st, u.Namespace, name, passChange(revision, fresh, policy, members, now),
		rolloutstore.Options{Settle: opts.Settle, Log: opts.log(), DryRun: opts.DryRun})
	if err != nil {
		return nil, nil, err
	}
	killpoint.Here("fleet-rollout-decided") // the state holds, no attempt written
	return splitHeld(planned, upgrade, doc.Decision)
}

// deviceMembers are the rollout's members, the devices u's planned
// attempts (those of upgrade, its namespace/name) go to, with their Devices' labels (a Device is found by its
// spec.deviceId, which its metadata.name need not be), and per device the
// digest of the binary its attempt installs.
func deviceMembers(set *model.Set, u *model.DeviceUpgrade, upgrade string, planned []fleet.Planned) ([]rollout.Member, map[string]string) {
	labels := map[string]map[string]string{}
	for _, d := range set.Devices {
		if d.Namespace == u.Namespace {
			labels[d.Spec.DeviceID] = d.Labels
		}
	}
	var members []rollout.Member
	binaries := map[string]string{}
	for _, p := range planned {
		if p.Upgrade == upgrade {
			id := p.Attempt.DeviceID
			members = append(members, rollout.Member{Name: id, Labels: labels[id]})
			binaries[id] = p.Attempt.Artifact.Digest
		}
	}
	return members, binaries
}

// deviceHealth sets what the bucket says of each member of doc's started
// waves: healthy once it reports version committed, broken once it reports
// version rolled-back (a rollback of another version is an earlier
// attempt's, which the device has not replaced yet) or rollback-failed
// (blocked whatever it was sent).
func deviceHealth(ctx context.Context, bucket statusReader, doc *rolloutstore.Doc, members []rollout.Member, version string) error {
	var started []string
	for _, ws := range doc.Waves {
		if ws.Started != nil {
			started = append(started, ws.Members...)
		}
	}
	if len(started) == 0 {
		return nil
	}
	statuses, err := bucket.States(ctx, started...)
	if err != nil {
		return fmt.Errorf("reading the states of its admitted devices: %w", err)
	}
	byID := map[string]fleet.Status{}
	for _, s := range statuses {
		byID[s.DeviceID] = s
	}
	for i := range members {
		st, ok := byID[members[i].Name]
		s := st.State
		if !ok || s == nil {
			continue
		}
		msg := fmt.Sprintf("%s %s %s", s.State, s.Version, s.Reason)
		switch {
		case s.State == wire.PhaseCommitted && s.Version == version:
			members[i].Health = rollout.Healthy
		case s.State == wire.PhaseRolledBack && s.Version == version:
			members[i].Health = rollout.Broken
		case s.State == fleetkv.StateRollbackFailed:
			// Blocked whatever it was sent: it takes no attempt.
			members[i].Health = rollout.Broken
			msg = fmt.Sprintf("%s: blocked until repaired (solar fleet repair %s --reason ...)", msg, st.DeviceID)
		}
		members[i].Message = targetreport.BoundMessage(msg)
	}
	return nil
}

// splitHeld are the planned attempts the decision lets through, and the
// results of the devices of upgrade key it holds.
func splitHeld(planned []fleet.Planned, key string, d rollout.Decision) ([]fleet.Planned, []fleet.Result, error) {
	state := map[string]rollout.MemberDecision{}
	for _, m := range d.Members {
		state[m.Name] = m
	}
	var keep []fleet.Planned
	var held []fleet.Result
	for _, p := range planned {
		m, ok := state[p.Attempt.DeviceID]
		if p.Upgrade != key || ok && admits(m.State) {
			keep = append(keep, p)
			continue
		}
		reason := fmt.Sprintf("wave %s: %s", m.Wave, m.Reason)
		if !ok { // a device the rollout's revision does not know: a failed one holds (stuck)
			reason = fmt.Sprintf("not in the rollout, which is %s: %s", d.Phase, d.Message)
		}
		a := p.Attempt
		held = append(held, fleet.Result{DeviceID: a.DeviceID, Upgrade: p.Upgrade, UUID: a.UUID, TargetVersion: a.TargetVersion,
			Platform: a.Artifact.Platform, Action: Held, Reason: reason})
	}
	if len(keep)+len(held) != len(planned) {
		return nil, nil, errors.New("a planned attempt was lost")
	}
	return keep, held, nil
}

// admits says whether a member in state gets its attempt applied: one its
// wave admitted (applied again, it is unchanged). A member whose wave has
// not started, or of a halted or aborted rollout, gets none: a halted
// rollout writes no new attempt anywhere. (Undo has no meaning for a
// device, which rolls back on its own: its members are held too.)
func admits(state string) bool {
	return state == rollout.Admitted || state == rollout.Passed || state == rollout.Failed
}
