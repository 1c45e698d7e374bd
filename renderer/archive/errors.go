package archive

import (
	"errors"
)

// The sentinel errors of the package, as errors.Is finds them.

// ErrRefused wraps every reason Unpack refuses an archive.
var ErrRefused = errors.New("archive refused, nothing pushed")

// errReadOnly is what writing to an unpacked archive gets.
var errReadOnly = errors.New("an unpacked archive is read-only")
