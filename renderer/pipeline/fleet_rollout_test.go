package pipeline

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/fleet"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
	"github.com/solar-pipeline/solar/renderer/store"
)

// states is a bucket's device states, as statusReader reads them.
type states map[string]*wire.DeviceState

func (s states) States(_ context.Context, ids ...string) ([]fleet.Status, error) {
	var out []fleet.Status
	for _, id := range ids {
		if st, ok := s[id]; ok {
			out = append(out, fleet.Status{DeviceID: id, State: st})
		}
	}
	return out, nil
}

// gateFixture is a DeviceUpgrade "up" of devices named node-N whose device
// ids are dev-N (the canary, dev-1, labelled ring: canary), in two waves:
// the canary ring, the rest; its planned attempts install digest.
type gateFixture struct {
	set     *model.Set
	upgrade *model.DeviceUpgrade
	st      store.Store
	bucket  states
	now     time.Time
}

func newGateFixture(t *testing.T, n int) *gateFixture {
	t.Helper()
	l, err := store.OpenLayout(context.Background(), filepath.Join(t.TempDir(), "out"), store.LayoutOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	f := &gateFixture{set: &model.Set{}, st: l, bucket: states{}, now: time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)}
	for i := 1; i <= n; i++ {
		d := &model.Device{Meta: model.Meta{Name: fmt.Sprintf("node-%d", i), Namespace: "fleet", Labels: map[string]string{"ring": "field"}}}
		if i == 1 {
			d.Labels["ring"] = "canary"
		}
		d.Spec.DeviceID = fmt.Sprintf("dev-%d", i)
		f.set.Devices = append(f.set.Devices, d)
	}
	f.upgrade = &model.DeviceUpgrade{Meta: model.Meta{Name: "up", Namespace: "fleet"}}
	f.upgrade.Spec.AgentVersion = "2.0.0"
	f.upgrade.Spec.Rollout = &model.DeviceRollout{Waves: []model.RolloutWave{
		{Name: "canary", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}}},
		{Name: "rest"},
	}}
	f.set.DeviceUpgrades = []*model.DeviceUpgrade{f.upgrade}
	return f
}

// pass is one gate over every device's planned attempt of binary: the
// device ids let through.
func (f *gateFixture) pass(t *testing.T, binary string) []string {
	t.Helper()
	var planned []fleet.Planned
	for _, d := range f.set.Devices {
		planned = append(planned, fleet.Planned{Upgrade: "fleet/up", Attempt: wire.Attempt{DeviceID: d.Spec.DeviceID,
			TargetVersion: f.upgrade.Spec.AgentVersion, Artifact: wire.Artifact{Digest: binary}}})
	}
	f.now = f.now.Add(time.Minute)
	keep, held, err := gateDevices(context.Background(), f.set, planned, f.bucket, f.st, Options{PublishOptions: PublishOptions{Now: f.now}})
	require.NoError(t, err)
	require.Len(t, held, len(planned)-len(keep))
	var ids []string
	for _, p := range keep {
		ids = append(ids, p.Attempt.DeviceID)
	}
	return ids
}

// TestDeviceGate: a wave's selector matches a Device's labels although its
// name is not its device id; a rollback reported for another version (an
// earlier attempt's) fails nobody; a failed rollout holds while its failed
// device would get the same binary again, even when a device is added, and
// starts again for a new binary; abort is kept across revisions as pause is.
func TestDeviceGate(t *testing.T) {
	f := newGateFixture(t, 3)
	ctx := context.Background()
	assert.Equal(t, []string{"dev-1"}, f.pass(t, "sha256:a"), "the canary ring, by its Device's labels")
	f.bucket["dev-1"] = &wire.DeviceState{State: wire.PhaseRolledBack, Version: "1.0.0"}
	assert.Equal(t, []string{"dev-1"}, f.pass(t, "sha256:a"), "a rollback of 1.0.0 does not fail 2.0.0")
	f.bucket["dev-1"] = &wire.DeviceState{State: wire.PhaseRolledBack, Version: "2.0.0", Reason: "not ready"}
	assert.Equal(t, []string{"dev-1"}, f.pass(t, "sha256:a"), "halted: the canary's attempt stands, nobody else's")
	doc, err := rolloutstore.Read(ctx, f.st, "fleet", DeviceRolloutName("up"))
	require.NoError(t, err)
	assert.Equal(t, "Halted", doc.Phase)

	d := &model.Device{Meta: model.Meta{Name: "node-4", Namespace: "fleet", Labels: map[string]string{"ring": "field"}}}
	d.Spec.DeviceID = "dev-4"
	f.set.Devices = append(f.set.Devices, d)
	assert.Equal(t, []string{"dev-1"}, f.pass(t, "sha256:a"), "a device added: still halted on the same binary")
	again, err := rolloutstore.Read(ctx, f.st, "fleet", DeviceRolloutName("up"))
	require.NoError(t, err)
	assert.Equal(t, doc.Revision, again.Revision)

	f.upgrade.Spec.AgentVersion = "2.0.1"
	assert.Equal(t, []string{"dev-1"}, f.pass(t, "sha256:b"), "a new binary starts again with the canary")
	_, err = rolloutstore.Act(ctx, f.st, "fleet", DeviceRolloutName("up"), rolloutstore.Abort, "", rolloutstore.Options{})
	require.NoError(t, err)
	f.upgrade.Spec.AgentVersion = "2.0.2"
	assert.Empty(t, f.pass(t, "sha256:c"), "aborted: a new revision keeps the abort")
}

// TestDeviceGateWindow: outside the rollout's windows no attempt is
// written, not even the canary's; once one opens, the wave starts.
func TestDeviceGateWindow(t *testing.T) {
	f := newGateFixture(t, 3)
	f.upgrade.Spec.Rollout.Windows = []model.RolloutWindow{{Schedule: "0 22 * * *", Duration: "1h", TimeZone: "UTC"}}
	assert.Empty(t, f.pass(t, "sha256:a"), "12:01: the window is closed")
	doc, err := rolloutstore.Read(context.Background(), f.st, "fleet", DeviceRolloutName("up"))
	require.NoError(t, err)
	assert.Contains(t, doc.Decision.Message, "no window is open")
	f.now = time.Date(2026, 12, 6, 22, 0, 0, 0, time.UTC)
	assert.Equal(t, []string{"dev-1"}, f.pass(t, "sha256:a"), "22:01: the window is open")
	f.now = time.Date(2026, 12, 6, 23, 30, 0, 0, time.UTC)
	f.bucket["dev-1"] = &wire.DeviceState{State: wire.PhaseCommitted, Version: "2.0.0"}
	assert.Equal(t, []string{"dev-1"}, f.pass(t, "sha256:a"), "23:31: the canary passed, but the next wave waits for a window")
}
