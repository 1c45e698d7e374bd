package store

import "errors"

// The sentinel errors of the package, as errors.Is finds them.

// errListed stops a catalog listing past the names wanted.
var errListed = errors.New("listed")

// ErrNoLayout is what OpenLayout returns for a missing layout it must find.
var ErrNoLayout = errors.New("no solar layout there")

// errReadOnly is what a dry run gets if it ever tried to write.
var errReadOnly = errors.New("the OCI layout is open read-only")

// What goes wrong with a registry, as errors.Is finds it in an error of the
// store (Explain); the CLI says which flag helps.
var (
	ErrDenied      = errors.New("the registry denied access")
	ErrUntrusted   = errors.New("the registry's TLS certificate is not trusted")
	ErrPlainHTTP   = errors.New("the registry speaks plain HTTP")
	ErrUnreachable = errors.New("the registry cannot be reached")
)
