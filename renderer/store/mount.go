package store

import (
	"bytes"
	"context"
	"io"
	"slices"
	"sync"

	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/solar-pipeline/solar/api"
)

// maxHomes bounds the blobs a Remote remembers a repository of: a run of
// 100,000 charts keeps about a megabyte of them, the first ones (the empty
// config every signature shares is among them).
const maxHomes = 10000

// blobHomes remembers, for blobs a run wrote or found in a repository of
// the registry, that repository: the same blob pushed into another
// repository is then mounted from it, one request (POST ?mount=&from=,
// 201) instead of two (POST, PUT). A registry that cannot mount it
// answers 202 and the blob is uploaded into that session, the same two
// requests as without; one that refuses the mount (an error) is not asked
// again in this run.
type blobHomes struct {
	mu    sync.Mutex
	homes map[digest.Digest]string
	off   bool
}

// home is a repository (its path in the registry) other than repo that has
// d, "" for none.
func (b *blobHomes) home(d digest.Digest, repo string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.off {
		return ""
	}
	if h := b.homes[d]; h != repo {
		return h
	}
	return ""
}

// learn records that repo has d.
func (b *blobHomes) learn(d digest.Digest, repo string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.homes == nil {
		b.homes = map[digest.Digest]string{}
	}
	if _, ok := b.homes[d]; ok || len(b.homes) < maxHomes {
		b.homes[d] = repo
	}
}

func (b *blobHomes) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.off = true
}

// manifestTypes are oras-go's manifest media types (its default
// ManifestMediaTypes): what Push sends to /manifests/, never mounted.
var manifestTypes = []string{
	string(types.DockerManifestSchema2),
	string(types.DockerManifestList),
	ocispec.MediaTypeImageManifest,
	ocispec.MediaTypeImageIndex,
	api.MediaTypeOCIArtifactManifest,
}

func (r remoteRepo) isBlob(d ocispec.Descriptor) bool {
	types := r.ManifestMediaTypes
	if types == nil {
		types = manifestTypes
	}
	return !slices.Contains(types, d.MediaType)
}

// Push pushes a blob another repository of the registry has (blobHomes) by
// mounting it from there, anything else as oras-go does.
func (r remoteRepo) Push(ctx context.Context, d ocispec.Descriptor, content io.Reader) error {
	if !r.isBlob(d) {
		return r.Repository.Push(ctx, d, content)
	}
	name := r.Reference.Repository
	if from := r.homes.home(d.Digest, name); from != "" {
		// Read once: a mount the registry cannot do is an upload of it.
		data, err := io.ReadAll(content)
		if err != nil {
			return err
		}
		err = r.Mount(ctx, d, from, func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
		if err == nil {
			r.homes.learn(d.Digest, name)
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		// Refused (no pull right on the other repository, say): push it,
		// and mount nothing more this run.
		r.homes.stop()
		content = bytes.NewReader(data)
	}
	err := r.Repository.Push(ctx, d, content)
	if err == nil {
		r.homes.learn(d.Digest, name)
	}
	return err
}

// Exists asks the repository for d, and remembers where a blob is.
func (r remoteRepo) Exists(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	ok, err := r.Repository.Exists(ctx, d)
	if ok && err == nil && r.isBlob(d) {
		r.homes.learn(d.Digest, r.Reference.Repository)
	}
	return ok, err
}
