package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
)

// Repairer is a repository whose blobs a run reads back cheaply and can
// write again: a layout's (publish.Options.Repair).
type Repairer interface {
	// Damaged says whether blob d is missing or not what d says.
	Damaged(ctx context.Context, d ocispec.Descriptor) (bool, error)
	// Rewrite writes blob d again from data.
	Rewrite(ctx context.Context, d ocispec.Descriptor, data []byte) error
}

// Damaged says whether blob d of the layout is missing or not what d says
// (read and hashed).
func (r *layoutRepo) Damaged(ctx context.Context, d ocispec.Descriptor) (bool, error) {
	rc, err := r.s.backend.Fetch(ctx, d)
	if errors.Is(err, errdef.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer rc.Close()
	vr := content.NewVerifyReader(rc, d)
	if _, err := io.Copy(io.Discard, vr); err != nil {
		return true, nil
	}
	return vr.Verify() != nil, nil
}

// Rewrite writes blob d of the layout again from data, renamed over what is
// there (a symlink there is replaced, not followed).
func (r *layoutRepo) Rewrite(ctx context.Context, d ocispec.Descriptor, data []byte) error {
	if digest.FromBytes(data) != d.Digest || int64(len(data)) != d.Size {
		return fmt.Errorf("the content given is not blob %s", d.Digest)
	}
	if err := r.write(ctx); err != nil {
		return err
	}
	dir := filepath.Join(r.s.dir, "blobs", d.Digest.Algorithm().String())
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return writeAtomic(filepath.Join(dir, d.Digest.Encoded()), data)
}
