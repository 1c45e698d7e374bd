package fleetkv

import (
	"errors"
)

// The sentinel errors of the package, as errors.Is finds them.

// Errors of a write (Apply, Write.Commit): test them with errors.Is.
var (
	// ErrChanged: another writer changed the device's attempt between this
	// run's read and its write. The run lost the race; run it again.
	ErrChanged = errors.New("the device's attempt changed underneath you")
	// ErrRebound: the attempt's UUID is already bound to other content.
	ErrRebound = errors.New("the attempt's UUID is already bound to other content")
)

// ErrWatchEnded: the bucket's watch ended without being stopped (the
// bucket was deleted, or the server dropped the watch's consumer).
var ErrWatchEnded = errors.New("the watch of the bucket ended")
