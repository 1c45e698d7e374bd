package pipeline

import (
	"context"
	"errors"

	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/sign"
)

// SigningKey signs the charts written (Options.SigningKey); Verifier checks
// their signatures as Flux does (VerifyOptions.Verifier,
// publish.Options.Verifier). The CLI names them here, not in package sign.
type (
	SigningKey = sign.Key
	Verifier   = sign.Verifier
)

// KeyPassword gives the password of an encrypted signing key (a cosign
// key pair's); ErrKeyNoPassword and ErrKeyWrongPassword say what is wrong
// with it, for the caller to name where the password comes from.
type KeyPassword = sign.Password

var (
	ErrKeyNoPassword    = sign.ErrNoPassword
	ErrKeyWrongPassword = sign.ErrWrongPassword
)

// ParseSigningKey reads an Ed25519 or ECDSA P-256 private key, PEM: PKCS
// #8, SEC 1, or encrypted as cosign generate-key-pair writes it, with the
// password pass gives (sign.ParseKey).
func ParseSigningKey(pem []byte, pass KeyPassword) (*SigningKey, error) {
	return sign.ParseKey(pem, pass)
}

// NewVerifier verifies with public keys, one PEM block each, named (by
// their files) where a signature verifies with none of them.
func NewVerifier(names []string, pems ...[]byte) (*Verifier, error) {
	return sign.NewNamedVerifier(names, pems...)
}

// PublicKey checks that p is one PEM public key and returns the key alone,
// re-encoded: what a Secret of keys gets, never whatever else p holds.
func PublicKey(p []byte) ([]byte, error) {
	pub, err := sign.ParsePublicKey(p)
	if err != nil {
		return nil, err
	}
	return sign.PublicPEM(pub)
}

// ArchiveSummary says what an archive written holds.
type ArchiveSummary = archive.Summary

// Export writes the newest versions of the layout of s, with their
// signatures, as one OCI archive file (archive.WriteFile).
func Export(ctx context.Context, s *Store, name string) (*ArchiveSummary, error) {
	if s.Layout == nil {
		return nil, errors.New("export reads a layout")
	}
	return archive.WriteFile(ctx, s.Layout, name)
}

// OpenArchive checks the archive file name whole, within the default
// limits, and unpacks it into a private temporary folder, each blob once,
// which closeLayout removes (archive.Unpack): a Store that Push pushes
// from as from a layout.
func OpenArchive(ctx context.Context, name string) (s *Store, closeLayout func() error, err error) {
	u, err := archive.Unpack(ctx, name, archive.DefaultLimits)
	if err != nil {
		return nil, nil, err
	}
	return &Store{Store: u}, u.Close, nil
}
