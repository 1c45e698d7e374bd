// Package capool builds the certificate pool a client trusts: the
// system's CAs and those of a PEM file the user names (a registry's, an
// issuer's, an artifact server's own CA).
package capool

import (
	"crypto/x509"
	"fmt"
	"os"
)

// WithFile is the system's pool (an empty one where the system has none)
// with the certificates of the PEM file added; a file that holds none is an
// error.
func WithFile(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", file)
	}
	return pool, nil
}
