package verify

import "errors"

// errNotSigned: a version without any signature.
var errNotSigned = errors.New("not signed")
