package store

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRetryPolicy: what is sent again and what fails at once (-short; the
// fault test of cmd/solar runs the same policy against a real registry).
func TestRetryPolicy(t *testing.T) {
	for _, c := range []struct {
		what  string
		resp  *http.Response
		err   error
		retry bool
	}{
		{"a reset connection", nil, fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{"a connection closed before the response", nil, fmt.Errorf("transport: %w", io.EOF), true},
		{"a cut response", nil, io.ErrUnexpectedEOF, true},
		{"a connection closed while the body is written", nil,
			&net.OpError{Op: "write", Net: "tcp", Err: fmt.Errorf("readfrom: %w", net.ErrClosed)}, true},
		{"a refused connection", nil, fmt.Errorf("dial: %w", syscall.ECONNREFUSED), true},
		{"another error", nil, errors.New("x509: certificate signed by unknown authority"), false},
		{"503", &http.Response{StatusCode: http.StatusServiceUnavailable}, nil, true},
		{"500", &http.Response{StatusCode: http.StatusInternalServerError}, nil, true},
		{"429", &http.Response{StatusCode: http.StatusTooManyRequests}, nil, true},
		{"404", &http.Response{StatusCode: http.StatusNotFound}, nil, false},
		{"401", &http.Response{StatusCode: http.StatusUnauthorized}, nil, false},
		{"200", &http.Response{StatusCode: http.StatusOK}, nil, false},
	} {
		retry, _ := retryPolicy.Retryable(c.resp, c.err)
		assert.Equal(t, c.retry, retry, c.what)
	}
}
