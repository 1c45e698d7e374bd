package ui

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/solar-pipeline/solar/renderer/published"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// VerifyKey is a public key the Target page's signature check trusts: what
// the Target's Flux verifies with (bootstrap-manifests --verify-key gives
// its OCIRepositories the same keys).
type VerifyKey struct {
	// Name is what the pages call it (the file it was read from); PEM the
	// key, one PEM PUBLIC KEY block. Only Name is ever shown.
	Name string
	PEM  []byte
}

// The results of a signature check, as the page's class names them (the
// text says the same in words).
const (
	sigVerified    = "verified"
	sigUnsigned    = "unsigned"
	sigNotVerified = "not-verified"
	sigError       = "error"
)

const (
	// maxSignatures bounds the results kept: past it they are all dropped
	// (each is checked again when asked).
	maxSignatures = 10_000
	// sigRecheck is how long an unsigned or unverified result is kept: a
	// later publish may sign an unchanged version (the first
	// --signing-key, a new key), and the page should see it. A verified
	// result is kept for good: a manifest digest never changes.
	sigRecheck = 10 * time.Minute
	// sigTimeout bounds one Target's check.
	sigTimeout = 30 * time.Second
)

// signatures checks the signatures of what Targets pull with the keys, as
// solar verify --key and Flux's OCIRepository verify do (sign.Verifier's
// Check), and keeps each result by repository, version and manifest
// digest: a page asks the store again only for what changed.
type signatures struct {
	store store.Store
	keys  []namedVerifier
	// all verifies with every key: its error is the reason shown when
	// none verifies (it names each key).
	all *sign.Verifier
	now func() time.Time

	mu       sync.Mutex
	results  map[sigKey]sigResult
	releases map[relKey]relFound
	refs     map[string][]published.Ref
	flights  singleflight.Group
	// checks counts the checks made (sign.Verifier.Check calls), for tests.
	checks int
}

// namedVerifier verifies with one key, to name the key that verified.
type namedVerifier struct {
	name string
	v    *sign.Verifier
}

// sigKey is a version as published: the result of its check does not
// change while its manifest does not (but for a signature added later).
type sigKey struct{ repository, version, digest string }

type sigResult struct {
	state, text string
	at          time.Time
}

// newSignatures loads the keys (none: the pages say no key was given).
func newSignatures(st store.Store, keys []VerifyKey, now func() time.Time) (*signatures, error) {
	s := &signatures{store: st, now: now, results: map[sigKey]sigResult{}, releases: map[relKey]relFound{}, refs: map[string][]published.Ref{}}
	if len(keys) == 0 {
		return s, nil
	}
	var names []string
	var pems [][]byte
	for _, k := range keys {
		v, err := sign.NewNamedVerifier([]string{k.Name}, k.PEM)
		if err != nil {
			return nil, fmt.Errorf("ui: verify key %s: %w", k.Name, err)
		}
		s.keys = append(s.keys, namedVerifier{k.Name, v})
		names, pems = append(names, k.Name), append(pems, k.PEM)
	}
	var err error
	s.all, err = sign.NewNamedVerifier(names, pems...)
	return s, err
}

// check is the result for subject in t: kept, or checked now.
func (s *signatures) check(ctx context.Context, t sign.Target, subject sign.Subject) sigResult {
	key := sigKey{subject.Repository, subject.Version, subject.Manifest.Digest.String()}
	s.mu.Lock()
	r, ok := s.results[key]
	s.mu.Unlock()
	if ok && (r.state == sigVerified || s.now().Sub(r.at) < sigRecheck) {
		return r
	}
	r = s.verify(ctx, t, subject)
	r.at = s.now()
	if r.state != sigError { // a registry's error is asked again next time
		s.mu.Lock()
		if len(s.results) >= maxSignatures {
			clear(s.results)
		}
		s.results[key] = r
		s.mu.Unlock()
	}
	return r
}

// verify checks subject with each key in turn, to name the one that
// verifies; when none does, the reason is what all the keys together say.
func (s *signatures) verify(ctx context.Context, t sign.Target, subject sign.Subject) sigResult {
	var last error
	for _, k := range s.keys {
		s.count()
		last = k.v.Check(ctx, t, subject)
		switch {
		case last == nil:
			return sigResult{state: sigVerified, text: "verified (key " + k.name + ")"}
		case !errors.Is(last, sign.ErrBadSignature):
			return verdict(last) // unsigned, or the store's error: the same with every key
		}
	}
	if len(s.keys) > 1 {
		s.count()
		last = s.all.Check(ctx, t, subject)
	}
	return verdict(last)
}

func (s *signatures) count() {
	s.mu.Lock()
	s.checks++
	s.mu.Unlock()
}

// verdict is what a failed check says: unsigned, not verified and why, or
// the store's error (never read as unsigned).
func verdict(err error) sigResult {
	switch {
	case err == nil:
		return sigResult{state: sigVerified, text: "verified"}
	case errors.Is(err, sign.ErrUnsigned):
		return sigResult{state: sigUnsigned, text: "unsigned"}
	case errors.Is(err, sign.ErrBadSignature):
		return sigResult{state: sigNotVerified, text: "not verified: " + err.Error()}
	}
	return sigResult{state: sigError, text: "registry error: " + store.Explain(err).Error()}
}
