package pipeline

import (
	"errors"
)

// The sentinel errors of the package, as errors.Is finds them.

// ErrNotReviewed: a push differs from its reviewed list.
var ErrNotReviewed = errors.New("the push differs from what was reviewed")

// ErrNoRepository: no repository under the prefix (a mistyped --out,
// --registry prefix or -n): Verify checked nothing, GC had nothing to
// collect.
var ErrNoRepository = errors.New("no chart repository")

// errNotSigned: a version without any signature.
var errNotSigned = errors.New("not signed")
