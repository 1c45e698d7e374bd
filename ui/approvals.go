package ui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
)

// approval is a wave that passed and asks for an approval, and the wave
// after it, which has not started: approving the one (what rollouts
// record) lets the other start.
type approval struct{ Wave, Next string }

// waveSpec is what a wave's policy says (the defaults where it says
// nothing), as the rollout page shows it.
type waveSpec struct {
	// Success and Error are successThreshold and errorThreshold, in %.
	Success, Error int
	// Deadline is progressDeadline, Pause the pause after it passed.
	Deadline, Pause string
	Approval        bool
}

// specs are a rollout's waves' policies by name; nil when the rollout's
// object is not in the watch's cache (deleted since, or the cache not
// filled): then every wave that passed may be waiting for an approval.
type specs map[string]waveSpec

// waveSpecs are the waves' policies of rollout id, from the object the
// pass reads them from: a Rollout's spec.waves, a DeviceUpgrade's
// spec.rollout.waves.
func (s *Server) waveSpecs(id load.ID) specs {
	var lister cache.GenericLister
	name, path := id.Name, []string{"spec", "waves"}
	if n, ok := strings.CutPrefix(id.Name, api.DeviceRolloutPrefix); ok {
		lister, name, path = s.fleet.upgrades, n, []string{"spec", "rollout", "waves"}
	} else {
		lister = s.model.rolloutObjects()
	}
	if lister == nil {
		return nil
	}
	obj, err := lister.ByNamespace(id.Namespace).Get(name)
	u, ok := obj.(*unstructured.Unstructured)
	if err != nil || !ok {
		return nil
	}
	waves, _, _ := unstructured.NestedSlice(u.Object, path...)
	out := specs{}
	for _, w := range waves {
		m, _ := w.(map[string]any)
		n, _ := m["name"].(string)
		ws := waveSpec{Success: 100, Deadline: "10m"}
		if v, ok := m["successThreshold"].(int64); ok {
			ws.Success = int(v)
		}
		if v, ok := m["errorThreshold"].(int64); ok {
			ws.Error = int(v)
		}
		if v, ok := m["progressDeadline"].(string); ok {
			ws.Deadline = v
		}
		ws.Pause, _ = m["pause"].(string)
		ws.Approval, _ = m["approval"].(bool)
		out[n] = ws
	}
	return out
}

// waveRow is one wave on the rollout page: its state and its policy.
type waveRow struct {
	Name            string
	Members         int
	Started, Passed *time.Time
	Spec            waveSpec
	Known, Approved bool
}

// waveRows are doc's waves with their policies.
func waveRows(doc *rolloutstore.Doc, sp specs) []waveRow {
	var out []waveRow
	for _, ws := range doc.Waves {
		spec, known := sp[ws.Name]
		out = append(out, waveRow{ws.Name, len(ws.Members), ws.Started, ws.PassedAt, spec, known, slices.Contains(doc.Approved, ws.Name)})
	}
	return out
}

// awaiting are the waves of doc an approve button names: each that passed,
// asks for an approval (when that is known), is not approved, and whose
// next wave has not started.
func awaiting(doc *rolloutstore.Doc, sp specs) []approval {
	var out []approval
	for i, ws := range doc.Waves {
		if ws.PassedAt == nil || i+1 >= len(doc.Waves) || doc.Waves[i+1].Started != nil || slices.Contains(doc.Approved, ws.Name) {
			continue
		}
		if sp == nil || sp[ws.Name].Approval {
			out = append(out, approval{ws.Name, doc.Waves[i+1].Name})
		}
	}
	return out
}

// approveWave says what is wrong with approving wave of doc ("" nothing):
// the form names one of the rollout's waves, one that asks for an approval
// (when that is known), never "the one waiting when the form arrives".
func approveWave(doc *rolloutstore.Doc, sp specs, wave string) string {
	switch {
	case wave == "":
		return "approve names the wave to approve (the form's field wave): nothing approved"
	case !slices.ContainsFunc(doc.Waves, func(ws rollout.WaveState) bool { return ws.Name == wave }):
		return fmt.Sprintf("Rollout %s/%s has no wave %q: nothing approved", doc.Namespace, doc.Name, wave)
	case sp != nil && !sp[wave].Approval:
		return fmt.Sprintf("wave %q of Rollout %s/%s does not ask for an approval (its spec's approval): nothing approved", wave, doc.Namespace, doc.Name)
	}
	return ""
}
