package archive

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/solar-pipeline/solar/renderer/store"
)

// Unpacked is an archive read, checked and unpacked into a private
// temporary folder, each blob once by its digest however many versions name
// it: a read-only store.Store (and store.Lister) of its versions, which
// publish.PushLayout pushes as it pushes a rendered layout. Close removes
// the folder.
type Unpacked struct {
	Versions []Version
	// Dependencies are the application charts and images it carries
	// (PlanDependencies relocates them).
	Dependencies []Dependency
	deps         []checkedDep
	st           *staged
	repos        map[string]*repo
	tmp          *tempDir
}

var _ store.Source = (*Unpacked)(nil)

// Close removes the unpacked archive.
func (u *Unpacked) Close() error {
	return u.tmp.remove()
}

// Unpack reads the archive file name, bounded by lim, and checks all of it
// (every blob's sha256, index.json and solar-export.json against each other
// and the blobs; see check): an archive that fails a check is refused
// (ErrRefused) naming what is wrong. Each blob is written once, into a new
// folder of the temporary directory (0700), as it is read: what is written
// is the archive's blobs, never more than the archive's own size (nor
// lim.Total), however many versions share a blob. The folders of earlier
// runs killed before they could remove theirs are removed first.
func Unpack(ctx context.Context, name string, lim Limits) (_ *Unpacked, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	return unpack(ctx, f, name, lim)
}

// unpack is Unpack of the archive's bytes r (named name in errors): the
// file's, or the parts' of a split archive (UnpackParts).
func unpack(ctx context.Context, r io.Reader, name string, lim Limits) (_ *Unpacked, err error) {
	tmp, err := newTempDir()
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			tmp.remove()
		}
	}()
	st, err := read(r, tmp.dir, lim)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	versions, deps, err := st.check()
	if err == nil {
		err = checkPushed(versions, deps, lim)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	u := &Unpacked{st: st, repos: map[string]*repo{}, tmp: tmp, deps: deps}
	for _, d := range deps {
		u.Dependencies = append(u.Dependencies, d.Dependency)
	}
	for _, v := range versions {
		u.Versions = append(u.Versions, v.Version)
		u.repos[v.Repository] = newRepo(st, v)
	}
	return u, nil
}

// checkPushed refuses an archive that pushes more than lim allows: a blob
// shared by many repositories is in the archive (and unpacked) once, but
// pushed to each repository.
func checkPushed(versions []checked, deps []checkedDep, lim Limits) error {
	what := "versions"
	if len(deps) > 0 {
		what = "versions and dependencies"
	}
	if len(versions)+len(deps) > lim.Entries {
		return refuse("%d %s: more than %d", len(versions)+len(deps), what, lim.Entries)
	}
	var total int64
	for _, d := range deps {
		total += d.size()
	}
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
		return refuse("its %s push %d bytes into their repositories (shared blobs once per repository): more than %d", what, total, lim.Total)
	}
	return nil
}
