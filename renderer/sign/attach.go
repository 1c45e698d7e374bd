package sign

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/settle"
	"golang.org/x/sync/errgroup"
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

// Attach signs s (a chart manifest in t, and where it is published) with
// k: it writes the bundle, the empty config and the referrer, unless t
// already has that referrer (Key signs deterministically: the same chart,
// the same referrer), in which case it writes nothing and returns a nil
// Written. It returns the
// referrer's descriptor either way. What it wrote is to be confirmed
// (Confirm): a registry without the referrers API keeps referrers in one
// index under the tag sha256-<hex>, which each writer reads, changes and
// writes back, so a concurrent writer's change can be lost.
func Attach(ctx context.Context, t Target, s Subject, k *Key) (ocispec.Descriptor, *Written, error) {
	return attach(ctx, t, s, k, true)
}

// Write is Attach for a manifest just written, which nothing can have
// signed yet: it does not ask first.
func Write(ctx context.Context, t Target, s Subject, k *Key) (ocispec.Descriptor, *Written, error) {
	return attach(ctx, t, s, k, false)
}

// made is k's signature of s as Attach writes it: the referrer's
// descriptor and bytes, the bundle and its layer descriptor.
type made struct {
	desc, layer ocispec.Descriptor
	raw, bundle []byte
}

func makeSignature(s Subject, k *Key) (*made, error) {
	b, err := k.SubjectBundle(s)
	if err != nil {
		return nil, err
	}
	raw, layer, err := Referrer(b, s.Manifest)
	if err != nil {
		return nil, err
	}
	desc := content.NewDescriptorFromBytes(ocispec.MediaTypeImageManifest, raw)
	desc.ArtifactType = api.MediaTypeSigstoreBundle
	return &made{desc: desc, layer: layer, raw: raw, bundle: b}, nil
}

// SignatureDigest is the digest of the referrer Attach writes for s with
// k, made without a store: Key signs the same way at every run, so a
// signature digest recorded earlier (a namespace index's) is k's
// signature of s exactly when it equals this one.
func SignatureDigest(s Subject, k *Key) (digest.Digest, error) {
	sg, err := makeSignature(s, k)
	if err != nil {
		return "", err
	}
	return sg.desc.Digest, nil
}

func attach(ctx context.Context, t Target, s Subject, k *Key, ask bool) (ocispec.Descriptor, *Written, error) {
	sg, err := makeSignature(s, k)
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	subject, desc := s.Manifest, sg.desc
	if ask {
		if ok, err := attached(ctx, t, subject, desc); err != nil || ok {
			return desc, nil, err
		}
	}
	// The bundle is new where the signature is: pushed without asking.
	if err := t.Push(ctx, sg.layer, bytes.NewReader(sg.bundle)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return desc, nil, err
	}
	if err := pushIfMissing(ctx, t, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data); err != nil {
		return desc, nil, err
	}
	w := &Written{t: t, Subject: subject, Desc: desc, raw: sg.raw}
	return desc, w, w.push(ctx)
}

// Written is a signature written into a store, to be confirmed.
type Written struct {
	t Target
	// Subject is the chart manifest; Desc the signature's referrer.
	Subject, Desc ocispec.Descriptor
	raw           []byte
}

func (w *Written) push(ctx context.Context) error {
	// A push of a manifest that is there already updates the referrers
	// index all the same.
	if err := w.t.Push(ctx, w.Desc, bytes.NewReader(w.raw)); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return fmt.Errorf("pushing the signature of %s: %w", w.Subject.Digest, err)
	}
	return nil
}

// Confirm reads the referrers of every signature written again, a settle
// after the writes, and writes again those another writer's referrers
// index lost, until each was seen at two reads a settle apart: a writer
// that read the index before a write has written its own by then (one
// round trip), and a loss shows. A loss by a writer that takes longer
// than a settle between its read and its write is not seen (no registry
// offers a conditional tag write; with the referrers API, or in a locked
// layout, there is no index to lose). One wait serves every signature.
func Confirm(ctx context.Context, ws []*Written) error {
	seen := make([]int, len(ws))
	for try := range 12 {
		var open []int
		for i := range ws {
			if ws[i] != nil && seen[i] < 2 {
				open = append(open, i)
			}
		}
		if len(open) == 0 {
			return nil
		}
		if err := settle.Wait(ctx, settleTime*time.Duration(1+try%3)); err != nil {
			return err
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(8)
		for _, i := range open {
			g.Go(func() error {
				w := ws[i]
				ok, err := attached(gctx, w.t, w.Subject, w.Desc)
				switch {
				case err != nil:
					return err
				case ok:
					seen[i]++
					return nil
				}
				seen[i] = 0
				return w.push(gctx)
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	for i, w := range ws {
		if w != nil && seen[i] < 2 {
			return fmt.Errorf("the signature of %s is lost to other writers of its referrers at every try", w.Subject.Digest)
		}
	}
	return nil
}

// Carry copies the signatures of s's manifest that src holds and dst
// lacks into dst (a reviewed layout's into a registry), to be confirmed as
// Attach's are. Only signatures are carried: a referrer of the empty
// config and one bundle layer, which v (when not nil) verifies as s
// (VerifySubject); any other referrer stays behind.
func Carry(ctx context.Context, src, dst Target, s Subject, v *Verifier) ([]*Written, error) {
	subject := s.Manifest
	refs, err := referrers(ctx, src, subject)
	if err != nil {
		return nil, err
	}
	var out []*Written
	for _, r := range refs {
		if ok, err := attached(ctx, dst, subject, r); err != nil || ok {
			if err != nil {
				return out, err
			}
			continue
		}
		w, err := carryOne(ctx, src, dst, s, r, v)
		if errors.Is(err, errNotSignature) {
			continue
		}
		if err != nil {
			return out, err
		}
		out = append(out, w)
	}
	return out, nil
}

// carryOne copies the signature r of s from src into dst, if it is one
// (and verifies with v); errNotSignature if not.
func carryOne(ctx context.Context, src, dst Target, s Subject, r ocispec.Descriptor, v *Verifier) (*Written, error) {
	subject := s.Manifest
	sg, err := readSignature(ctx, src, r)
	if errors.Is(err, errNotSignature) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("reading the signature %s of %s: %w", r.Digest, subject.Digest, err)
	}
	if v != nil && v.VerifySubject(sg.bundle, s) != nil {
		return nil, errNotSignature
	}
	m := sg.m
	if m.Config.Digest != ocispec.DescriptorEmptyJSON.Digest || m.Subject == nil || m.Subject.Digest != subject.Digest {
		return nil, errNotSignature
	}
	if err := pushIfMissing(ctx, dst, ocispec.DescriptorEmptyJSON, ocispec.DescriptorEmptyJSON.Data); err != nil {
		return nil, err
	}
	if err := pushIfMissing(ctx, dst, m.Layers[0], sg.bundle); err != nil {
		return nil, err
	}
	w := &Written{t: dst, Subject: subject, Desc: r, raw: sg.raw}
	return w, w.push(ctx)
}

// settleTime is longer than a writer's read, change and write of a referrers
// index on a registry close by.
var settleTime = 100 * time.Millisecond

// attached says whether desc is among subject's referrers in t.
func attached(ctx context.Context, t Target, subject, desc ocispec.Descriptor) (bool, error) {
	refs, err := referrers(ctx, t, subject)
	if err != nil {
		return false, err
	}
	return slices.ContainsFunc(refs, func(r ocispec.Descriptor) bool { return r.Digest == desc.Digest }), nil
}

// maxReferrers bounds the signatures read of one manifest: a registry
// that lists more is refused, not followed page after page.
const maxReferrers = 100

// referrers lists the signature referrers of subject in t, at most
// maxReferrers.
func referrers(ctx context.Context, t Target, subject ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	var refs []ocispec.Descriptor
	var err error
	if rl, ok := t.(registry.ReferrerLister); ok {
		err = rl.Referrers(ctx, subject, api.MediaTypeSigstoreBundle, func(page []ocispec.Descriptor) error {
			if refs = append(refs, page...); len(refs) > maxReferrers {
				return errTooMany
			}
			return nil
		})
	} else {
		refs, err = registry.Referrers(ctx, t, subject, api.MediaTypeSigstoreBundle)
		if err == nil && len(refs) > maxReferrers {
			err = errTooMany
		}
	}
	if err != nil && !errors.Is(err, errdef.ErrNotFound) {
		return nil, fmt.Errorf("reading the signatures of %s: %w", subject.Digest, err)
	}
	return refs, nil
}

func decodeManifest(raw []byte) (*ocispec.Manifest, error) {
	var m ocispec.Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decoding the manifest: %w", err)
	}
	return &m, nil
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
