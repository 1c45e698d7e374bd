package archive

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// What a run leaves behind when it is killed (SIGKILL: no deferred
// removal runs) is named so that a later run finds it: unpackPrefix in the
// temporary directory (Unpack's folder), exportPrefix beside the archive
// (WriteFile's file before its rename). Each run holds an exclusive flock
// on what it made until it removes or renames it; a later run removes
// those nobody holds that are older than staleAfter (the moment between
// making one and locking it: a run just starting is never taken for a dead
// one).
const (
	unpackPrefix = "solar-archive-"
	exportPrefix = ".solar-export-"
	staleAfter   = 10 * time.Second
)

// tempDir is Unpack's folder, locked while in use.
type tempDir struct {
	dir  string
	lock *os.File
}

// newTempDir removes the unpack folders of dead runs, then makes and locks
// a new one (0700).
func newTempDir() (*tempDir, error) {
	sweep(os.TempDir(), unpackPrefix, true)
	dir, err := os.MkdirTemp("", unpackPrefix+"*")
	if err != nil {
		return nil, err
	}
	lock, err := lockPath(dir)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &tempDir{dir: dir, lock: lock}, nil
}

// remove removes the folder, then releases its lock.
func (t *tempDir) remove() error {
	err := os.RemoveAll(t.dir)
	t.lock.Close()
	return err
}

// lockPath opens name (a folder or a file) and takes its exclusive flock
// without waiting; the lock lasts until the file is closed.
func lockPath(name string) (*os.File, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// sweep removes what dead runs left in dir: entries named prefix…, of the
// kind a run makes (folders when dirs, else regular files; never a link),
// owned by this user, older than staleAfter and locked by no one. What it
// cannot remove it leaves: a later run tries again.
func sweep(dir, prefix string, dirs bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		info, err := os.Lstat(p)
		if err != nil || info.IsDir() != dirs || (!dirs && !info.Mode().IsRegular()) ||
			time.Since(info.ModTime()) < staleAfter || !ownedByMe(info) {
			continue
		}
		lock, err := lockPath(p)
		if err != nil {
			continue // held: a live run's
		}
		if dirs {
			os.RemoveAll(p)
		} else {
			os.Remove(p)
		}
		lock.Close()
	}
}

func ownedByMe(info os.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
