package publish

import (
	"errors"
	"fmt"
)

// The sentinel errors of the package, as errors.Is finds them.

// ErrIndex: an index that is damaged, of another schema or namespace, or
// not signed with the run's key: the run goes without it.
var ErrIndex = errors.New("the namespace's index is not usable")

// errTooLarge: a manifest over maxChartManifest bytes.
var errTooLarge = errors.New("a manifest too large")

// errTaken: the version was tagged by someone else between deciding and pushing.
var errTaken = errors.New("version taken by another writer")

// ErrMoved: the registry changed since the layout was rendered against it.
var ErrMoved = fmt.Errorf("the registry moved since the layout was rendered")

// ErrNoVersion: a repository does not hold the version asked for.
var ErrNoVersion = errors.New("no such version")

// ErrSignature: a version of a layout to push carries no signature that
// verifies.
var ErrSignature = errors.New("not signed with the keys given")

// ErrImmutable: the tag holds other content. Under Put a tag is bound once:
// agent versions, device attempts, a version pushed from a layout.
var ErrImmutable = errors.New("holds other content: versions are immutable")
