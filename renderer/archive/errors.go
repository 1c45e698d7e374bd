package archive

import (
	"errors"
)

// The sentinel errors of the package, as errors.Is finds them.

// ErrRefused wraps every reason Unpack refuses an archive.
var ErrRefused = errors.New("archive refused, nothing pushed")

// ErrNothingNew is an export relative to the other side's state
// (Options.Have) that would carry nothing: it holds everything.
var ErrNothingNew = errors.New("nothing to carry: the other side holds every version and dependency")

// errReadOnly is what writing to an unpacked archive gets.
var errReadOnly = errors.New("an unpacked archive is read-only")
