package pipeline

import (
	"context"
	"errors"

	"github.com/opencontainers/go-digest"

	"github.com/solar-pipeline/solar/renderer/archive"
)

// Export writes the newest versions of the layout of s, with their
// signatures, as one OCI archive file (archive.WriteFile), leaving out
// what have says the other side holds (nil: nothing).
func Export(ctx context.Context, s *Store, name string, have func(digest.Digest) bool) (*archive.Summary, error) {
	if s.Layout == nil {
		return nil, errors.New("export reads a layout")
	}
	return archive.WriteFileWith(ctx, s.Layout, archive.Options{Have: have}, name)
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
