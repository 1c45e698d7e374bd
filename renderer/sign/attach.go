package sign

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
)

// Target is where a chart and its signatures live: a registry's repository
// (remote.Repository, which keeps the referrers tag of a registry without
// the referrers API) or a layout.
type Target interface {
	oras.Target
	content.ReadOnlyGraphStorage
}

// Attach signs subject (a chart manifest in t, named name) with k: it
// writes the bundle, the empty config and the referrer, unless t already
// has that referrer (Ed25519: the same chart, the same referrer), in which
// case it writes nothing and says so (written false). A registry without
// the referrers API keeps referrers in one index under the tag
// sha256-<hex>, which each writer reads, changes and writes back: a
// concurrent writer's change can be lost. So Attach reads the referrers
// again after writing, twice a settle apart, and writes its own again
// while it is missing: a loss by a writer whose read-modify-write began
// before this write is seen; one that takes longer than a settle is not
// (no registry offers a conditional tag write; with the referrers API
// there is no index to lose).
func Attach(ctx context.Context, t Target, name string, subject ocispec.Descriptor, k *Key) (desc ocispec.Descriptor, written bool, err error) {
	b, err := k.Bundle(name, subject.Digest)
	if err != nil {
		return ocispec.Descriptor{}, false, err
	}
	raw, layer, err := Referrer(b, subject)
	if err != nil {
		return ocispec.Descriptor{}, false, err
	}
	desc = content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	desc.ArtifactType = BundleMediaType
	if ok, err := attached(ctx, t, subject, desc); err != nil || ok {
		return desc, false, err
	}
	for _, blob := range []struct {
		d ocispec.Descriptor
		b []byte
	}{{layer, b}, {ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data}} {
		if err := pushIfMissing(ctx, t, blob.d, blob.b); err != nil {
			return desc, false, err
		}
	}
	// Present at two reads a settle apart: a writer that read the index
	// before this write has written its own by then (one round trip), and
	// a loss shows.
	seen := 0
	for try := range 12 {
		if seen == 0 {
			// A push of a manifest that is there already updates the
			// referrers index all the same.
			if err := t.Push(ctx, desc, bytes.NewReader(raw)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
				return desc, true, fmt.Errorf("pushing the signature of %s: %w", subject.Digest, err)
			}
		}
		select {
		case <-ctx.Done():
			return desc, true, ctx.Err()
		case <-time.After(settle * time.Duration(1+try%3)):
		}
		ok, err := attached(ctx, t, subject, desc)
		if err != nil {
			return desc, true, err
		}
		if !ok {
			seen = 0
			continue
		}
		if seen++; seen == 2 {
			return desc, true, nil
		}
	}
	return desc, true, fmt.Errorf("the signature of %s is lost to other writers of its referrers at every try", subject.Digest)
}

// settle is longer than a writer's read, change and write of a referrers
// index on a registry close by.
var settle = 100 * time.Millisecond

// attached says whether desc is among subject's referrers in t.
func attached(ctx context.Context, t Target, subject, desc ocispec.Descriptor) (bool, error) {
	refs, err := registry.Referrers(ctx, t, subject, BundleMediaType)
	if err != nil && !errors.Is(err, errdef.ErrNotFound) {
		return false, fmt.Errorf("reading the signatures of %s: %w", subject.Digest, err)
	}
	for _, r := range refs {
		if r.Digest == desc.Digest {
			return true, nil
		}
	}
	return false, nil
}

func pushIfMissing(ctx context.Context, t Target, d ocispec.Descriptor, b []byte) error {
	ok, err := t.Exists(ctx, d)
	if err != nil || ok {
		return err
	}
	if err := t.Push(ctx, d, bytes.NewReader(b)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return err
	}
	return nil
}
