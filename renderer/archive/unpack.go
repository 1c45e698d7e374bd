package archive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"

	"github.com/solar-pipeline/solar/renderer/publish"
)

// Unpacked is an archive read, checked and unpacked into a private
// temporary layout, open read-only: push it with publish.PushLayout. Close
// removes it.
type Unpacked struct {
	Layout   *publish.Layout
	Versions []Version
	dir      string
}

// Close closes the layout and removes it.
func (u *Unpacked) Close() error {
	err := u.Layout.Close()
	if rerr := os.RemoveAll(u.dir); err == nil {
		err = rerr
	}
	return err
}

// Unpack reads the archive file name, bounded by lim, and checks all of it
// (every blob's sha256, index.json and solar-export.json against each other
// and the blobs; see check) before it unpacks it into a new folder of the
// temporary directory (0700), through the Layout API. An archive that fails
// a check is refused (ErrRefused) naming what is wrong.
func Unpack(ctx context.Context, name string, lim Limits) (_ *Unpacked, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	dir, err := os.MkdirTemp("", "solar-archive-*") // 0700
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	staging := filepath.Join(dir, "staging")
	if err := os.Mkdir(staging, 0o700); err != nil {
		return nil, err
	}
	st, err := read(f, staging, lim)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	versions, err := st.check()
	if err == nil {
		err = checkUnpacked(versions, lim)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	l, err := st.build(ctx, filepath.Join(dir, "layout"), versions)
	if err != nil {
		return nil, fmt.Errorf("%s: unpacking: %w", name, err)
	}
	os.RemoveAll(staging)
	u := &Unpacked{Layout: l, dir: dir}
	for _, v := range versions {
		u.Versions = append(u.Versions, v.Version)
	}
	return u, nil
}

// build writes the checked versions into a new layout in dir and opens it
// read-only, as push opens a rendered one.
func (st *staged) build(ctx context.Context, dir string, versions []checked) (*publish.Layout, error) {
	l, err := publish.OpenLayout(ctx, dir, publish.LayoutOptions{})
	if err != nil {
		return nil, err
	}
	defer l.Close()
	for _, v := range versions {
		repo, err := l.Repository(ctx, v.Repository)
		if err != nil {
			return nil, err
		}
		if err := st.push(ctx, repo, v.manifest, v.blobs); err != nil {
			return nil, err
		}
		if err := repo.Tag(ctx, v.manifest, v.Version.Version); err != nil {
			return nil, err
		}
		for _, s := range v.sigs {
			// An artifactType: the layout keeps it as a referrer.
			if err := st.push(ctx, repo, s.desc, s.blobs); err != nil {
				return nil, err
			}
		}
	}
	if err := l.Save(ctx); err != nil {
		return nil, err
	}
	if err := l.Close(); err != nil {
		return nil, err
	}
	return publish.OpenLayout(ctx, dir, publish.LayoutOptions{ReadOnly: true, MustExist: true})
}

// checkUnpacked refuses an archive that unpacks (and pushes) to more than
// lim allows: a blob shared by many repositories is in the archive once but
// in each repository's layout, and is pushed to each.
func checkUnpacked(versions []checked, lim Limits) error {
	if len(versions) > lim.Entries {
		return refuse("%d versions: more than %d", len(versions), lim.Entries)
	}
	var total int64
	for _, v := range versions {
		total += v.manifest.Size
		for _, d := range v.blobs {
			total += d.Size
		}
		for _, sg := range v.sigs {
			total += sg.desc.Size
			for _, d := range sg.blobs {
				total += d.Size
			}
		}
	}
	if total > lim.Total {
		return refuse("its versions take %d bytes once unpacked into their repositories (shared blobs once per repository): more than %d", total, lim.Total)
	}
	return nil
}

// push writes a manifest's blobs, then the manifest, into repo.
func (st *staged) push(ctx context.Context, repo publish.Repository, manifest ocispec.Descriptor, blobs []ocispec.Descriptor) error {
	for _, d := range append(blobs, manifest) {
		ok, err := repo.Exists(ctx, d)
		if err != nil || ok {
			if err != nil {
				return err
			}
			continue
		}
		f, err := st.open(d.Digest)
		if err != nil {
			return err
		}
		err = repo.Push(ctx, d, f)
		f.Close()
		if err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
			return fmt.Errorf("%s: %w", d.Digest, err)
		}
	}
	return nil
}
