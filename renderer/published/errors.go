package published

import "errors"

// The sentinel errors of the package, as errors.Is finds them.

// ErrNoRepository: no chart repository under the prefix (a mistyped --out,
// --registry prefix or -n): verify checked nothing, gc had nothing to
// collect.
var ErrNoRepository = errors.New("no chart repository")
