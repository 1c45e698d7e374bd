package pipeline

import (
	"context"
	"slices"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/model"
)

// HasTarget says whether the set holds Target ns/name.
func HasTarget(set *model.Set, ns, name string) bool {
	return model.Get[model.Target](set, api.KindTarget, ns, name) != nil
}

// TargetNamespaces are the namespaces, sorted, in which the set holds a
// Target called name: where a Target the user named without -n may be.
func TargetNamespaces(set *model.Set, name string) []string {
	var out []string
	for _, o := range set.Objects() {
		if o.Kind == api.KindTarget && o.Name == name && !slices.Contains(out, o.Namespace) {
			out = append(out, o.Namespace)
		}
	}
	slices.Sort(out)
	return out
}

// PublishedNamespaces are the namespaces, sorted, whose bootstrap chart
// repository of Target name the store lists (a registry's catalog): where a
// Target the user named without -n may be.
func PublishedNamespaces(ctx context.Context, s *Store, name string) ([]string, error) {
	repos, err := s.Repositories(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range repos {
		if ns, target, ok := chain.BootstrapTarget(r); ok && target == name && !slices.Contains(out, ns) {
			out = append(out, ns)
		}
	}
	slices.Sort(out)
	return out, nil
}

// BootstrapRepository is where Target ns/target's bootstrap chart lives in
// the store (chain.BootstrapRepository).
func BootstrapRepository(ns, target string) string {
	return chain.BootstrapRepository(ns, target)
}

// WithoutCredential counts the Targets of the plan that get the agent but
// have no credential (none was minted: no API server was given).
func (p *Plan) WithoutCredential() int {
	if p.lazy != nil {
		return p.lazy.withoutCredential
	}
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
