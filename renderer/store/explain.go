package store

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// Explain is explain for the registry errors of callers outside this package
// (publish's and the fleet's pushes and reads).
func Explain(err error) error { return explain(err) }

// explain marks the errors users meet with one of the errors above, in a
// sentence: what was asked, what the registry answered.
func explain(err error) error {
	var already *registryError
	if err == nil || errors.As(err, &already) {
		return err
	}
	var resp *errcode.ErrorResponse
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var opErr *net.OpError
	switch {
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return &registryError{kind: ErrDenied, msg: "no credentials for it: none given and none in the docker config or helm's registry config (solar registry login HOST -u USER --password-stdin writes one)", err: err}
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		return &registryError{kind: ErrDenied, msg: answer(resp), err: err}
	case errors.As(err, &unknownCA), errors.As(err, &hostname):
		return &registryError{kind: ErrUntrusted, msg: err.Error(), err: err}
	case strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return &registryError{kind: ErrPlainHTTP, msg: err.Error(), err: err}
	case errors.As(err, &opErr):
		return &registryError{kind: ErrUnreachable, msg: err.Error(), err: err}
	case errors.As(err, &resp):
		return &registryError{kind: errors.New("the registry answered with an error"), msg: answer(resp), err: err}
	}
	return err
}

// answer says what a registry answered to which request, without the raw
// error details oras-go prints ([map[Action:pull ...]]).
func answer(resp *errcode.ErrorResponse) string {
	var msgs []string
	for _, e := range resp.Errors {
		if e.Message != "" {
			msgs = append(msgs, e.Message)
		}
	}
	s := fmt.Sprintf("%d %s to %s %s", resp.StatusCode, http.StatusText(resp.StatusCode), resp.Method, resp.URL)
	if len(msgs) > 0 {
		s += ": " + strings.Join(msgs, "; ")
	}
	return s
}

// registryError is a registry failure in a sentence; errors.Is finds both its
// kind and the error it explains.
type registryError struct {
	kind error
	msg  string
	err  error
}

func (e *registryError) Error() string   { return e.kind.Error() + ": " + e.msg }
func (e *registryError) Unwrap() []error { return []error{e.kind, e.err} }

// BlobUnknown: the registry lost a blob of the manifest, as the Distribution
// registry does when two writers upload the same blob into one repository at
// once (seen with its 2.8 release, Debian's docker-registry).
func BlobUnknown(err error) bool {
	var resp *errcode.ErrorResponse
	return errors.As(err, &resp) && slices.ContainsFunc(resp.Errors, func(e errcode.Error) bool {
		return e.Code == errcode.ErrorCodeManifestBlobUnknown || e.Code == errcode.ErrorCodeBlobUnknown
	})
}

// IsNotFound: the store does not have it (a layout says so with an error, a
// registry with a 404).
func IsNotFound(err error) bool {
	var resp *errcode.ErrorResponse
	return errors.Is(err, errdef.ErrNotFound) || (errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound)
}
