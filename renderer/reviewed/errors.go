package reviewed

import "errors"

// The sentinel errors of the package, as errors.Is finds them.

// ErrNotReviewed: a push differs from its reviewed list.
var ErrNotReviewed = errors.New("the push differs from what was reviewed")
