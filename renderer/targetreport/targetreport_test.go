package targetreport

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// TestSolArShaped: a report in SolAr's shape reads into Spec with nothing
// left over, and writes back the same.
func TestSolArShaped(t *testing.T) {
	raw, err := os.ReadFile("testdata/solar-shaped.yaml")
	require.NoError(t, err)
	var obj struct {
		Spec json.RawMessage `json:"spec"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &obj))
	var s Spec
	dec := json.NewDecoder(bytes.NewReader(obj.Spec))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&s), "every field of SolAr's shape is one of Spec's")
	require.Len(t, s.Releases, 2)
	assert.Equal(t, Ready, s.Releases[0].Phase)
	assert.Equal(t, "1.4.2", s.Releases[0].Revision)
	assert.Equal(t, "InstallSucceeded", s.Releases[0].HelmConditions[0].Reason)
	assert.Equal(t, metav1.ConditionUnknown, s.Preflight.Checks[1].Status)

	back, err := json.Marshal(s)
	require.NoError(t, err)
	assert.JSONEq(t, string(obj.Spec), string(back), "written back as read")
}

// hr is a HelmRelease at generation gen with conditions {type, status,
// reason, observedGeneration}.
func hr(gen int64, conds ...[4]any) Object {
	var cs []any
	for _, c := range conds {
		cs = append(cs, map[string]any{"type": c[0], "status": c[1], "reason": c[2], "observedGeneration": c[3],
			"lastTransitionTime": "2026-12-01T10:00:00Z", "message": "m"})
	}
	return Object{"metadata": map[string]any{"generation": gen}, "status": map[string]any{"observedGeneration": int64(-1), "conditions": cs}}
}

// TestPhaseOf: the phases as SolAr maps them, each condition gated on its
// own observedGeneration.
func TestPhaseOf(t *testing.T) {
	ready := hr(1, [4]any{"Ready", "True", "Succeeded", int64(1)})
	for _, tc := range []struct {
		name         string
		source, helm Object
		want         Phase
	}{
		{"no pair", nil, nil, Pending},
		{"source only", ready, nil, Progressing},
		{"both ready", ready, hr(3, [4]any{"Ready", "True", "InstallSucceeded", int64(3)}), Ready},
		{"ready about an older generation", ready, hr(4, [4]any{"Ready", "True", "UpgradeSucceeded", int64(3)}), Progressing},
		{"installing", ready, hr(2, [4]any{"Ready", "Unknown", "Progressing", int64(2)}, [4]any{"Reconciling", "True", "Progressing", int64(2)}), Progressing},
		{"failed, a retry coming", ready, hr(2, [4]any{"Ready", "False", "InstallFailed", int64(2)}), Degraded},
		{"failed, helm-controller retrying", ready, hr(2, [4]any{"Ready", "False", "UpgradeFailed", int64(2)}, [4]any{"Reconciling", "True", "ProgressingWithRetry", int64(2)}), Degraded},
		{"no source", nil, hr(2, [4]any{"Ready", "True", "UpgradeSucceeded", int64(2)}), Progressing},
		{"rolled back", ready, hr(2, [4]any{"Ready", "False", "UpgradeFailed", int64(2)}, [4]any{"Remediated", "True", "RollbackSucceeded", int64(2)}), Degraded},
		{"retries spent", ready, hr(2, [4]any{"Ready", "False", "InstallFailed", int64(2)}, [4]any{"Stalled", "True", "RetriesExceeded", int64(2)}), Failed},
		{"drifted is a flag", ready, hr(2, [4]any{"Ready", "True", "UpgradeSucceeded", int64(2)}, [4]any{"Drifted", "True", "DriftDetected", int64(2)}), Ready},
		{"source cannot verify", hr(1, [4]any{"Ready", "False", "VerificationError", int64(1)}), hr(2, [4]any{"Ready", "True", "UpgradeSucceeded", int64(2)}), Degraded},
		{"source stalled", hr(1, [4]any{"Ready", "False", "InvalidSTSConfiguration", int64(1)}, [4]any{"Stalled", "True", "InvalidSTSConfiguration", int64(1)}),
			hr(2, [4]any{"Ready", "True", "UpgradeSucceeded", int64(2)}), Failed},
		{"source not yet ready", hr(2, [4]any{"Ready", "True", "Succeeded", int64(1)}), hr(2, [4]any{"Ready", "True", "UpgradeSucceeded", int64(2)}), Progressing},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, PhaseOf(tc.source, tc.helm)) })
	}
}

// TestBoundedMessage: a message cut to the schema's 32 KiB stays valid
// UTF-8, so what the agent writes reads back the same.
func TestBoundedMessage(t *testing.T) {
	long := strings.Repeat("a", maxMessage-4) + "éééé"
	got := BoundMessage(long)
	assert.LessOrEqual(t, len(got), maxMessage)
	assert.True(t, utf8.ValidString(got))
	assert.Equal(t, "ok\uFFFD", BoundMessage("ok\xff"))
}

// TestRevisionIsTheNewest: helm-controller keeps status.history newest
// first; the live chart version is the first entry's, not an older one's.
func TestRevisionIsTheNewest(t *testing.T) {
	helm := Object{"status": map[string]any{"history": []any{
		map[string]any{"chartVersion": "0.0.3", "status": "deployed"},
		map[string]any{"chartVersion": "0.0.2", "status": "superseded"},
		map[string]any{"chartVersion": "0.0.1", "status": "superseded"},
	}}}
	assert.Equal(t, "0.0.3", Revision(helm))
	assert.Empty(t, Revision(Object{"status": map[string]any{}}))
}
