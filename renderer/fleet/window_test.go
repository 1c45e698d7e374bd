package fleet

import (
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

func at(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestWindowOf: a device takes the first update window whose selector
// matches it, the occurrence open at now (its start and end) or else the
// next one to open, in UTC whatever the window's zone; a device that no
// window matches has none.
func TestWindowOf(t *testing.T) {
	nightly := model.UpdateWindow{RolloutWindow: model.RolloutWindow{Schedule: "0 22 * * *", Duration: "4h"}}
	berlin := model.UpdateWindow{RolloutWindow: model.RolloutWindow{Schedule: "0 22 * * *", Duration: "2h", TimeZone: "Europe/Berlin"}}
	canary := model.UpdateWindow{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"ring": "canary"}},
		RolloutWindow: model.RolloutWindow{Schedule: "0 6 * * 1-5", Duration: "1h"}}
	hourly := model.UpdateWindow{RolloutWindow: model.RolloutWindow{Schedule: "0 * * * *", Duration: "2h"}}
	for _, tc := range []struct {
		name    string
		windows []model.UpdateWindow
		labels  map[string]string
		now     string
		want    *wire.Window // nil: no window
		path    string
	}{
		{"open: its start and end", []model.UpdateWindow{nightly}, nil, "2026-03-10T23:30:00Z",
			&wire.Window{NotBefore: "2026-03-10T22:00:00Z", StartBefore: "2026-03-11T02:00:00Z"}, "spec.updateWindows[0]"},
		{"open at its very start", []model.UpdateWindow{nightly}, nil, "2026-03-10T22:00:00Z",
			&wire.Window{NotBefore: "2026-03-10T22:00:00Z", StartBefore: "2026-03-11T02:00:00Z"}, "spec.updateWindows[0]"},
		{"closed: the next one", []model.UpdateWindow{nightly}, nil, "2026-03-10T12:00:00Z",
			&wire.Window{NotBefore: "2026-03-10T22:00:00Z", StartBefore: "2026-03-11T02:00:00Z"}, "spec.updateWindows[0]"},
		{"just closed: the next one", []model.UpdateWindow{nightly}, nil, "2026-03-11T02:00:00Z",
			&wire.Window{NotBefore: "2026-03-11T22:00:00Z", StartBefore: "2026-03-12T02:00:00Z"}, "spec.updateWindows[0]"},
		{"overlapping occurrences: the earliest open", []model.UpdateWindow{hourly}, nil, "2026-03-10T10:30:00Z",
			&wire.Window{NotBefore: "2026-03-10T09:00:00Z", StartBefore: "2026-03-10T11:00:00Z"}, "spec.updateWindows[0]"},
		{"DST zone, winter time (UTC+1)", []model.UpdateWindow{berlin}, nil, "2026-03-28T12:00:00Z",
			&wire.Window{NotBefore: "2026-03-28T21:00:00Z", StartBefore: "2026-03-28T23:00:00Z"}, "spec.updateWindows[0]"},
		{"DST zone, the day summer time began (UTC+2)", []model.UpdateWindow{berlin}, nil, "2026-03-29T12:00:00Z",
			&wire.Window{NotBefore: "2026-03-29T20:00:00Z", StartBefore: "2026-03-29T22:00:00Z"}, "spec.updateWindows[0]"},
		{"DST zone, open across midnight UTC", []model.UpdateWindow{berlin}, nil, "2026-07-01T21:30:00Z",
			&wire.Window{NotBefore: "2026-07-01T20:00:00Z", StartBefore: "2026-07-01T22:00:00Z"}, "spec.updateWindows[0]"},
		{"the first matching group wins", []model.UpdateWindow{canary, nightly}, map[string]string{"ring": "canary"}, "2026-03-13T12:00:00Z",
			&wire.Window{NotBefore: "2026-03-16T06:00:00Z", StartBefore: "2026-03-16T07:00:00Z"}, "spec.updateWindows[0]"}, // Friday: Monday's
		{"a later group for the others", []model.UpdateWindow{canary, nightly}, map[string]string{"ring": "field"}, "2026-03-13T12:00:00Z",
			&wire.Window{NotBefore: "2026-03-13T22:00:00Z", StartBefore: "2026-03-14T02:00:00Z"}, "spec.updateWindows[1]"},
		{"no matching group: no window", []model.UpdateWindow{canary}, map[string]string{"ring": "field"}, "2026-03-13T12:00:00Z", nil, ""},
		{"no update windows: no window", nil, nil, "2026-03-13T12:00:00Z", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &model.DeviceUpgrade{}
			u.Spec.UpdateWindows = tc.windows
			parsed, err := updateWindows(u)
			require.NoError(t, err)
			got, path, err := windowOf(parsed, tc.labels, at(tc.now))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.path, path)
			if got != nil {
				_, _, err := got.Times()
				assert.NoError(t, err, "the wire's own check holds")
			}
		})
	}
}

const windowsTree = `
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: a, labels: {ring: canary}}
spec: {deviceId: a, platform: linux/arm64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: b, labels: {ring: field}}
spec: {deviceId: b, platform: linux/arm64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: Device
metadata: {name: c, labels: {ring: lab}}
spec: {deviceId: c, platform: linux/arm64}
---
apiVersion: solar.opendefense.cloud/v1alpha1
kind: DeviceUpgrade
metadata: {name: up}
spec:
  agentVersion: 3.0.0
  artifact: fleet/agent:3.0.0
  deviceIds: [a, b, c]
  NOTAFTER
  updateWindows:
    - selector: {matchLabels: {ring: canary}}
      schedule: "0 6 * * *"
      duration: 1h
    - selector: {matchExpressions: [{key: ring, operator: In, values: [field]}]}
      schedule: "0 22 * * *"
      duration: 4h
      timeZone: Europe/Berlin
`

func resolveWindows(t *testing.T, notAfter string, now time.Time) ([]Planned, []string) {
	t.Helper()
	src := []byte(strings.ReplaceAll(windowsTree, "NOTAFTER", notAfter))
	objs, problems := load.Bytes("fleet.yaml", src, load.Options{Namespace: "fleet"})
	require.False(t, problems.HasErrors(), problems)
	set, err := model.NewSet(objs)
	require.NoError(t, err)
	layer := ocispec.Descriptor{Digest: "sha256:0000000000000000000000000000000000000000000000000000000000000001", Size: 1}
	planned, problems := Resolve(set, map[string]Agent{
		"fleet/agent:3.0.0": {Repository: "fleet/agent", BlobURL: "https://r/", Layers: map[string]ocispec.Descriptor{"linux/arm64": layer}},
	}, now)
	var msgs []string
	for _, p := range problems.Sorted() {
		msgs = append(msgs, p.String())
	}
	return planned, msgs
}

// TestResolveWindows: each device's attempt carries its group's window
// (none for a device no group matches); the attempt's UUID is its content's,
// so the same window planned again is the same attempt and the next window
// another; a window that opens only after notAfter is a problem of its entry.
func TestResolveWindows(t *testing.T) {
	now := at("2026-03-10T12:00:00Z")
	planned, problems := resolveWindows(t, "", now)
	require.Empty(t, problems)
	require.Len(t, planned, 3)
	assert.Equal(t, &wire.Window{NotBefore: "2026-03-11T06:00:00Z", StartBefore: "2026-03-11T07:00:00Z"}, planned[0].Attempt.Window)
	assert.Equal(t, &wire.Window{NotBefore: "2026-03-10T21:00:00Z", StartBefore: "2026-03-11T01:00:00Z"}, planned[1].Attempt.Window)
	assert.Nil(t, planned[2].Attempt.Window, "no group matches c: it starts at once")
	for _, p := range planned {
		require.NoError(t, p.Attempt.Verify())
	}

	again, _ := resolveWindows(t, "", now.Add(8*time.Hour)) // b's window is open: the same one
	assert.Equal(t, planned[1].Attempt.UUID, again[1].Attempt.UUID, "the same window: the same attempt")
	assert.Equal(t, planned[2].Attempt.UUID, again[2].Attempt.UUID)
	later, _ := resolveWindows(t, "", now.Add(14*time.Hour)) // b's window closed: the next one
	assert.Equal(t, "2026-03-11T21:00:00Z", later[1].Attempt.Window.NotBefore)
	assert.NotEqual(t, planned[1].Attempt.UUID, later[1].Attempt.UUID, "a new window: a new attempt")

	planned, problems = resolveWindows(t, `notAfter: "2026-03-10T23:00:00Z"`, now)
	require.Len(t, planned, 2, "b's window opens before notAfter, c has none")
	assert.Equal(t, []string{"fleet.yaml:26: spec.updateWindows[0]: DeviceUpgrade fleet/up: device a: its window opens at " +
		"2026-03-11T06:00:00Z, not before spec.notAfter 2026-03-10T23:00:00Z: the device would never start the attempt"}, problems)
}
