package updater

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// The updater runs as root beside an agent that may be hostile: it never
// follows a link the agent could have made, never opens a FIFO or a device
// the agent points it at, and never reads more than it needs.

// checkOwnFolder: dir is a real folder (no symlink), owned by this process's
// user, and writable by nobody else, so that nobody else can swap its
// entries.
func checkOwnFolder(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return fmt.Errorf("%s is not a folder (%s)", dir, fi.Mode().Type())
	case !ok || int(st.Uid) != os.Geteuid():
		return fmt.Errorf("%s is not owned by uid %d", dir, os.Geteuid())
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by group or others (%s): only its owner may write it", dir, fi.Mode().Perm())
	}
	return nil
}

// ownFolder makes dir with mode when missing and checks it (checkOwnFolder).
func ownFolder(dir string, mode os.FileMode) error {
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return checkOwnFolder(dir)
}

// makeFolders makes and checks the root's folders. The agent's folder run/
// is given to cred's user and group when set.
func makeFolders(p Paths, cred *syscall.Credential) error {
	for _, d := range []struct {
		dir  string
		mode os.FileMode
	}{{p.Root, 0o755}, {p.Versions(), 0o755}, {filepath.Dir(p.Log()), 0o700}} {
		if err := ownFolder(d.dir, d.mode); err != nil {
			return err
		}
	}
	if err := os.Mkdir(p.Run(), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	fi, err := os.Lstat(p.Run())
	if err != nil {
		return err
	}
	if !fi.IsDir() { // only root writes the root: root's own mistake
		return fmt.Errorf("%s is not a folder", p.Run())
	}
	if cred != nil {
		// By path, in a folder only root writes: nobody can swap it.
		return os.Lchown(p.Run(), int(cred.Uid), int(cred.Gid))
	}
	return nil
}

// readBeneath reads the regular file name of dir, at most max bytes: no
// symbolic link is followed on the way (openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS, O_NOFOLLOW where the kernel lacks openat2), a FIFO
// or device is opened without blocking and refused, a larger file refused.
func readBeneath(dir, name string, max int64) ([]byte, error) {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	defer unix.Close(dfd)
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC | unix.O_NOCTTY
	fd, err := unix.Openat2(dfd, name, &unix.OpenHow{
		Flags:   uint64(flags),
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
	if errors.Is(err, unix.ENOSYS) {
		fd, err = unix.Openat(dfd, name, flags, 0)
	}
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir + "/" + name, Err: err}
	}
	f := os.NewFile(uintptr(fd), dir+"/"+name)
	defer f.Close()
	b, _, err := readRegular(f, max)
	return b, err
}

// readRegular reads f, opened without following a link and without
// blocking: a regular file only (a FIFO or a device is refused), at most max
// bytes. It also returns what fstat says of f.
func readRegular(f *os.File, max int64) ([]byte, os.FileInfo, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, fmt.Errorf("%s is not a regular file (%s)", f.Name(), fi.Mode().Type())
	}
	if fi.Size() > max {
		return nil, fi, fmt.Errorf("%s is larger than %d bytes", f.Name(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(b)) > max {
		err = fmt.Errorf("%s is larger than %d bytes", f.Name(), max)
	}
	return b, fi, err
}

// openLog opens the supervised agent's log for appending: no link followed,
// a regular file only.
func openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return f, nil
}
