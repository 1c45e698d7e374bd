package ui

import (
	"fmt"
	"slices"
	"strings"

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

// asks are the waves of a rollout whose policy asks for an approval once
// they passed (spec approval: true); nil when the rollout's object is not
// in the watch's cache (deleted since, or the cache not filled): then every
// wave that passed may be waiting.
type asks map[string]bool

// approvalWaves are the waves of rollout id that ask for an approval, from
// the object the pass reads its policy from: a Rollout's spec.waves, a
// DeviceUpgrade's spec.rollout.waves.
func (s *Server) approvalWaves(id load.ID) asks {
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
	out := asks{}
	for _, w := range waves {
		m, _ := w.(map[string]any)
		if yes, _ := m["approval"].(bool); yes {
			n, _ := m["name"].(string)
			out[n] = true
		}
	}
	return out
}

// awaiting are the waves of doc an approve button names: each that passed,
// asks for an approval (when that is known), is not approved, and whose
// next wave has not started.
func awaiting(doc *rolloutstore.Doc, ask asks) []approval {
	var out []approval
	for i, ws := range doc.Waves {
		if ws.PassedAt == nil || i+1 >= len(doc.Waves) || doc.Waves[i+1].Started != nil || slices.Contains(doc.Approved, ws.Name) {
			continue
		}
		if ask == nil || ask[ws.Name] {
			out = append(out, approval{ws.Name, doc.Waves[i+1].Name})
		}
	}
	return out
}

// approveWave says what is wrong with approving wave of doc ("" nothing):
// the form names one of the rollout's waves, one that asks for an approval
// (when that is known), never "the one waiting when the form arrives".
func approveWave(doc *rolloutstore.Doc, ask asks, wave string) string {
	switch {
	case wave == "":
		return "approve names the wave to approve (the form's field wave): nothing approved"
	case !slices.ContainsFunc(doc.Waves, func(ws rollout.WaveState) bool { return ws.Name == wave }):
		return fmt.Sprintf("Rollout %s/%s has no wave %q: nothing approved", doc.Namespace, doc.Name, wave)
	case ask != nil && !ask[wave]:
		return fmt.Sprintf("wave %q of Rollout %s/%s does not ask for an approval (its spec's approval): nothing approved", wave, doc.Namespace, doc.Name)
	}
	return ""
}
