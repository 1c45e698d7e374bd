package ui

import (
	"context"
	"encoding/json"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/status"
	"github.com/solar-pipeline/solar/renderer/store"
)

// sigView is the Target page's signature check: per chart the Target's
// Flux pulls (its newest bootstrap chart, the release charts that one
// names), what the keys say of its signature.
type sigView struct {
	// Keys: the UI was given keys; without them nothing is checked.
	Keys  bool
	Items []sigItem
	// Error says why the charts could not all be listed.
	Error string
}

// sigItem is one chart version and its check.
type sigItem struct {
	Chart, Repository, Version, Digest string
	// State is the class (sigVerified...); Text says it in words.
	State, Text string
}

// Colour is the page's colour class for the state, one the style already
// has (the text says it all; the colour only repeats it).
func (it sigItem) Colour() string {
	switch it.State {
	case sigVerified:
		return "Passed"
	case sigError:
		return "Waiting"
	}
	return "Failed"
}

// relKey is a release chart version a bootstrap chart names, as its
// Target's namespace finds it; relFound where it is.
type relKey struct{ ns, url, version string }

type relFound struct {
	repository string
	desc       ocispec.Descriptor
}

// view is the signature check of what t pulls. The first look at a version
// reads its signatures; later ones resolve the bootstrap chart's version
// and use what was found (the release charts' digests are status's). The
// pages of one Target that ask at once check once.
func (s *signatures) view(ctx context.Context, t status.Target) sigView {
	if len(s.keys) == 0 || t.Bootstrap == "" {
		return sigView{Keys: len(s.keys) > 0}
	}
	v, _, _ := s.flights.Do(t.Namespace+"/"+t.Name+":"+t.Bootstrap, func() (any, error) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sigTimeout)
		defer cancel()
		return s.target(ctx, t), nil
	})
	return v.(sigView)
}

// target checks t's newest bootstrap chart and the release charts it names.
func (s *signatures) target(ctx context.Context, t status.Target) sigView {
	v := sigView{Keys: true}
	name := chain.BootstrapRepository(t.Namespace, t.Name)
	repo, err := s.store.Repository(ctx, name)
	var desc ocispec.Descriptor
	if err == nil {
		desc, err = repo.Resolve(ctx, t.Bootstrap)
	}
	if err != nil {
		v.Items = []sigItem{{Chart: "bootstrap chart", Repository: name, Version: t.Bootstrap, State: sigError, Text: verdict(err).text}}
		return v
	}
	v.Items = append(v.Items, s.item(ctx, repo, "bootstrap chart", name, t.Bootstrap, desc))
	refs, err := s.refsOf(ctx, repo, desc)
	if err != nil {
		v.Error = "the release charts it names cannot be read: " + store.Explain(err).Error()
		return v
	}
	for _, ref := range refs {
		v.Items = append(v.Items, s.release(ctx, t, ref))
	}
	return v
}

// item checks one version.
func (s *signatures) item(ctx context.Context, repo store.Repository, chart, name, version string, desc ocispec.Descriptor) sigItem {
	it := sigItem{Chart: chart, Repository: name, Version: version, Digest: desc.Digest.String()}
	t, ok := repo.(sign.Target)
	if !ok {
		it.State, it.Text = sigError, "the store keeps no signatures"
		return it
	}
	r := s.check(ctx, t, sign.Subject{Repository: name, Version: version, Manifest: desc})
	it.State, it.Text = r.state, r.text
	return it
}

// refsOf are the release charts the bootstrap chart of manifest desc names:
// read once per digest (its content never changes).
func (s *signatures) refsOf(ctx context.Context, repo store.Repository, desc ocispec.Descriptor) ([]published.Ref, error) {
	s.mu.Lock()
	refs, ok := s.refs[desc.Digest.String()]
	s.mu.Unlock()
	if ok {
		return refs, nil
	}
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if refs, err = published.ManifestRefs(ctx, repo, m); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.refs) >= maxSignatures {
		clear(s.refs)
	}
	s.refs[desc.Digest.String()] = refs
	s.mu.Unlock()
	return refs, nil
}

// release checks the release chart version ref names.
func (s *signatures) release(ctx context.Context, t status.Target, ref published.Ref) sigItem {
	f, err := s.findRelease(ctx, t, ref)
	switch {
	case err != nil:
		return sigItem{Chart: ref.Release, Version: ref.Version, State: sigError, Text: verdict(err).text}
	case f.repository == "":
		return sigItem{Chart: ref.Release, Version: ref.Version, State: sigError, Text: "not in the store: " + ref.URL}
	}
	repo, err := s.store.Repository(ctx, f.repository)
	if err != nil {
		return sigItem{Chart: ref.Release, Repository: f.repository, Version: ref.Version, State: sigError, Text: verdict(err).text}
	}
	return s.item(ctx, repo, ref.Release, f.repository, ref.Version, f.desc)
}

// findRelease is the repository and manifest of the release chart version
// ref names, as solar status finds it (the URL's longest suffix the store
// has, a chart repository of t's namespace). What was found is used again
// while status finds the same digest there.
func (s *signatures) findRelease(ctx context.Context, t status.Target, ref published.Ref) (relFound, error) {
	key := relKey{t.Namespace, ref.URL, ref.Version}
	s.mu.Lock()
	f, ok := s.releases[key]
	s.mu.Unlock()
	if ok && f.desc.Digest.String() == desiredDigest(t, ref) {
		return f, nil
	}
	name, desc, err := status.FindReleaseChart(ctx, s.store, t.Namespace, ref)
	if err != nil || name == "" {
		return relFound{}, err
	}
	f = relFound{name, desc}
	s.mu.Lock()
	if len(s.releases) >= maxSignatures {
		clear(s.releases)
	}
	s.releases[key] = f
	s.mu.Unlock()
	return f, nil
}

// desiredDigest is the manifest digest status found for the release
// version ref names ("" when none).
func desiredDigest(t status.Target, ref published.Ref) string {
	for _, r := range t.Releases {
		if r.Release == ref.Release && r.Desired == ref.Version {
			return r.DesiredDigest
		}
	}
	return ""
}
