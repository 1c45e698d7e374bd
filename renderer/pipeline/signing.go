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

// ParseSigningKey reads an Ed25519 private key, PEM (PKCS #8).
func ParseSigningKey(pem []byte) (*SigningKey, error) { return sign.ParseKey(pem) }

// NewVerifier verifies with public keys, one PEM block each.
func NewVerifier(pems ...[]byte) (*Verifier, error) { return sign.NewVerifier(pems...) }

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
