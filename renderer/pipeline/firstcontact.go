package pipeline

import (
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/chart"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/model"
)

// FirstContact says what a Target's cluster needs once to pull its
// bootstrap chart (chart.FirstContact).
type FirstContact = chart.FirstContact

// FirstContactManifests are the first-contact objects of fc, ready to print
// for kubectl apply (chart.Manifests).
func FirstContactManifests(fc FirstContact) ([]map[string]any, error) {
	return chart.Manifests(fc)
}

// HasTarget says whether the set holds Target ns/name.
func HasTarget(set *model.Set, ns, name string) bool {
	return model.Get[model.Target](set, model.KindTarget, ns, name) != nil
}

// BootstrapRepository is where Target ns/target's bootstrap chart lives in
// the store (chain.BootstrapRepository).
func BootstrapRepository(ns, target string) string {
	return chain.BootstrapRepository(ns, target)
}

// WithoutCredential counts the Targets of the plan that get the agent but
// have no credential (none was minted: no API server was given).
func (p *Plan) WithoutCredential() int {
	n := 0
	for _, t := range p.Targets {
		if t.Credential != nil {
			continue
		}
		for _, s := range t.Releases {
			if credential.Wanted(s.Release) {
				n++
				break
			}
		}
	}
	return n
}
