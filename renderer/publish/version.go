package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/Masterminds/semver/v3"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/store"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"
)

// publish publishes one job at the version its content needs: the latest
// version when its layers are the same (nothing is written), else the next
// patch version, skipping versions another writer takes meanwhile. absent:
// the repository had no versions when the run began (Options.Absent), so they
// are not asked for unless the version is found taken. Each attempt has two
// steps: decide the version, then push it.
func (p *publisher) publish(ctx context.Context, job Job, key string, absent bool) (Result, error) {
	r := Result{Repository: job.Repository}
	repo, err := p.store.Repository(ctx, job.Repository)
	if err != nil {
		return r, fail("opening", job, err)
	}
	check := false
	for attempt := 1; ; attempt++ {
		d, err := p.decide(ctx, repo, job, key, attempt > 1 || !absent, &r)
		if d.notYet && attempt < maxAttempts {
			// Listed but not readable yet: another writer is tagging it at
			// this moment (the registry lists a tag before its manifest
			// resolves). Look again in a moment.
			time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
			continue
		}
		if err != nil || d.unchanged {
			return r, err
		}
		staged, manifest, err := p.pack(ctx, job, key, d, &r)
		if err != nil || p.opts.DryRun {
			return r, err
		}
		// Where blobs belong to one repository (a registry), a repository
		// without versions has none yet: do not ask for each.
		scoped, ok := repo.(store.BlobScoper)
		err = push(ctx, staged, repo, manifest, d.version, check || d.updated || !ok || !scoped.BlobsPerRepository())
		if (errors.Is(err, errTaken) || store.BlobUnknown(err)) && attempt < maxAttempts {
			// A blob another writer uploaded at the same moment may be lost
			// to a registry race: check each blob next time.
			check = true
			continue
		}
		if err != nil {
			return r, fail("pushing version "+d.version+" to", job, err)
		}
		return r, nil
	}
}

// fail says what publishing job was doing when err happened.
func fail(doing string, job Job, err error) error {
	return fmt.Errorf("%s %s: %w", doing, job.Repository, store.Explain(err))
}

// decision is the version an attempt publishes.
type decision struct {
	version string
	// updated: the repository has versions, and this is the next one.
	updated bool
	// unchanged: the latest version holds the same content (r says so);
	// notYet: it is listed but cannot be read yet.
	unchanged, notYet bool
}

// decide reads the latest version of repo (unless ask is false: none then)
// and compares job with it: unchanged, or the next patch version, or
// 0.0.1 for a repository without versions.
func (p *publisher) decide(ctx context.Context, repo store.Repository, job Job, key string, ask bool, r *Result) (decision, error) {
	var latest *semver.Version
	if ask {
		var err error
		if latest, err = latestVersion(ctx, repo); err != nil {
			return decision{}, fail("listing the versions of", job, err)
		}
	}
	if latest == nil {
		return decision{version: "0.0.1"}, nil
	}
	unchanged, notYet, err := p.compare(ctx, repo, job, key, latest.Original(), r)
	return decision{version: latest.IncPatch().String(), updated: true, unchanged: unchanged, notYet: notYet}, err
}

// pack packs job at d.version and stages it for push; r gets the
// version, its digest and the action.
func (p *publisher) pack(ctx context.Context, job Job, key string, d decision, r *Result) (content.ReadOnlyStorage, ocispec.Descriptor, error) {
	art, err := job.Pack(d.version)
	if err != nil {
		return nil, ocispec.Descriptor{}, err
	}
	p.opts.PackCache.put(p.opts.PackCache.key(key, d.version), digests(art.Layers))
	if p.opts.Compare && !d.updated {
		r.New = art.Layers
	}
	staged, manifest, err := stage(ctx, art)
	if err != nil {
		return nil, ocispec.Descriptor{}, fail("packing", job, err)
	}
	r.Version, r.Digest, r.Action, r.built = d.version, manifest.Digest.String(), Create, &built{manifest, digests(art.Layers)}
	if d.updated {
		r.Action = Update
	}
	return staged, manifest, nil
}

// compare compares job with the latest version of repo: unchanged (r says
// so), or not, with r.Old and r.New filled for Options.Compare. notYet: the
// latest version is listed but cannot be read yet.
func (p *publisher) compare(ctx context.Context, repo store.Repository, job Job, content, latest string, r *Result) (unchanged, notYet bool, _ error) {
	packed, art, err := p.layers(job, content, latest)
	if err != nil {
		return false, false, err
	}
	desc, layers, err := ManifestLayers(ctx, repo, latest)
	if p.opts.Repair && desc.Digest != "" && (err != nil || slices.Equal(layers, packed)) {
		same, rerr := p.repair(ctx, repo, job, latest, desc, art)
		if rerr != nil {
			return false, false, rerr
		}
		if err != nil && same {
			layers, err = packed, nil // its manifest was bad: written again
		}
	}
	if err != nil {
		return false, store.IsNotFound(err), fmt.Errorf("reading version %s of %s: %w", latest, job.Repository, store.Explain(err))
	}
	if slices.Equal(layers, packed) {
		r.Version, r.Digest, r.Action, r.built = latest, desc.Digest.String(), Unchanged, &built{desc, packed}
		return true, false, nil
	}
	if p.opts.Compare {
		if art == nil {
			if art, err = job.Pack(latest); err != nil {
				return false, false, err
			}
		}
		if r.Old, err = fetchLayers(ctx, repo, desc); err != nil {
			return false, false, fmt.Errorf("reading version %s of %s: %w", latest, job.Repository, store.Explain(err))
		}
		r.New = art.Layers
	}
	return false, false, nil
}

// layers returns the digests of job's layers at version: from the pack cache
// when it knows them under content, job's key (art is then nil), else packed.
func (p *publisher) layers(job Job, content, version string) (_ []string, art *Artifact, _ error) {
	k := p.opts.PackCache.key(content, version)
	if l, ok := p.opts.PackCache.get(k); ok {
		return l, nil, nil
	}
	art, err := job.Pack(version)
	if err != nil {
		return nil, nil, err
	}
	l := digests(art.Layers)
	p.opts.PackCache.put(k, l)
	return l, art, nil
}

// digests lists the digests of blobs.
func digests(blobs []Blob) []string {
	out := make([]string, len(blobs))
	for i, b := range blobs {
		out[i] = b.Desc.Digest.String()
	}
	return out
}

// latestVersion is the highest semver tag of the repository, nil if none or
// if the repository does not exist yet.
func latestVersion(ctx context.Context, repo store.Repository) (*semver.Version, error) {
	tags, err := store.Tags(ctx, repo)
	if err != nil {
		return nil, err
	}
	var latest *semver.Version
	for _, t := range tags {
		v, err := semver.StrictNewVersion(t)
		if err == nil && (latest == nil || v.GreaterThan(latest)) {
			latest = v
		}
	}
	return latest, nil
}

// Newest is the newest version of a repository (its highest strict semver
// tag), what PushLayout pushes; "" when it has none.
func Newest(ctx context.Context, repo store.Repository) (string, error) {
	v, err := latestVersion(ctx, repo)
	if err != nil || v == nil {
		return "", err
	}
	return v.Original(), nil
}

// ManifestLayers is the manifest descriptor of a tag and the digests of its
// layers, in one request where the store can: what publish compares with the
// input, and verify with an index entry.
func ManifestLayers(ctx context.Context, repo store.Repository, tag string) (ocispec.Descriptor, []string, error) {
	desc, b, err := fetchManifest(ctx, repo, tag)
	if err != nil {
		return desc, nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return desc, nil, fmt.Errorf("decoding manifest: %w", err)
	}
	out := make([]string, len(m.Layers))
	for i, l := range m.Layers {
		out[i] = l.Digest.String()
	}
	return desc, out, nil
}

// fetchManifest reads the manifest a tag names, in one request where the
// store can, at most maxChartManifest bytes.
func fetchManifest(ctx context.Context, repo store.Repository, tag string) (ocispec.Descriptor, []byte, error) {
	var desc ocispec.Descriptor
	var rc io.ReadCloser
	var err error
	if rf, ok := repo.(registry.ReferenceFetcher); ok {
		if desc, rc, err = rf.FetchReference(ctx, tag); err != nil {
			return desc, nil, err
		}
		defer rc.Close()
	} else if desc, err = repo.Resolve(ctx, tag); err != nil {
		return desc, nil, err
	}
	if desc.Size > maxChartManifest {
		return desc, nil, fmt.Errorf("%w: %d bytes, more than %d", errTooLarge, desc.Size, maxChartManifest)
	}
	if rc == nil {
		b, err := content.FetchAll(ctx, repo, desc)
		return desc, b, err
	}
	b, err := content.ReadAll(rc, desc)
	return desc, b, err
}

// fetchLayers reads the layers of a manifest.
func fetchLayers(ctx context.Context, repo store.Repository, desc ocispec.Descriptor) ([]Blob, error) {
	b, err := content.FetchAll(ctx, repo, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decoding manifest: %w", err)
	}
	out := make([]Blob, len(m.Layers))
	for i, l := range m.Layers {
		data, err := content.FetchAll(ctx, repo, l)
		if err != nil {
			return nil, err
		}
		out[i] = Blob{Desc: l, Data: data}
	}
	return out, nil
}

// ReadChart reads the chart archive (the Helm chart layer) of a repository's
// version from the store.
func ReadChart(ctx context.Context, st store.Store, repository, version string) ([]byte, error) {
	repo, err := st.Repository(ctx, repository)
	if err != nil {
		return nil, err
	}
	archive, err := ChartArchive(ctx, repo, version)
	if err != nil {
		return nil, fmt.Errorf("version %s of %s: %w", version, repository, store.Explain(err))
	}
	return archive, nil
}

// Bounds of what ChartArchive reads.
const (
	maxChartManifest = 4 << 20
	maxChartArchive  = 32 << 20
)

// ChartArchive reads the Helm chart layer of the manifest reference (a tag
// or a digest) names in target, its manifest and layer bounded (4 MiB,
// 32 MiB); nil, without an error, when the manifest has no chart layer.
func ChartArchive(ctx context.Context, target oras.ReadOnlyTarget, reference string) ([]byte, error) {
	desc, err := target.Resolve(ctx, reference)
	if err != nil {
		return nil, err
	}
	if desc.Size > maxChartManifest {
		return nil, fmt.Errorf("a manifest of %d bytes, more than %d", desc.Size, maxChartManifest)
	}
	b, err := content.FetchAll(ctx, target, desc)
	if err != nil {
		return nil, err
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("decoding the manifest: %w", err)
	}
	for _, l := range m.Layers {
		if l.MediaType != api.MediaTypeHelmChart {
			continue
		}
		if l.Size > maxChartArchive {
			return nil, fmt.Errorf("a chart of %d bytes, more than %d", l.Size, maxChartArchive)
		}
		return content.FetchAll(ctx, target, l)
	}
	return nil, nil
}

// ChartLayer is the Helm chart archive among a chart's layers (nil if none).
func ChartLayer(layers []Blob) []byte {
	for _, l := range layers {
		if l.Desc.MediaType == api.MediaTypeHelmChart {
			return l.Data
		}
	}
	return nil
}
