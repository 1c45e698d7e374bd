package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockLayout takes the layout's lock: exclusive to write, shared to read.
// Another solar holding it makes this one wait (opts.Waiting is told once)
// until the lock is free, the context ends or opts.LockTimeout passes.
func lockLayout(ctx context.Context, dir string, exclusive bool, opts LayoutOptions) (*os.File, error) {
	name := filepath.Join(dir, lockFile)
	// O_NOFOLLOW: a symlink planted as the lock file is not followed.
	fd, err := syscall.Open(name, syscall.O_CREAT|syscall.O_RDWR|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("locking OCI layout %s: %w", dir, err)
	}
	f := os.NewFile(uintptr(fd), name)
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	var deadline <-chan time.Time
	if opts.LockTimeout > 0 {
		deadline = time.After(opts.LockTimeout)
	}
	for told := false; ; {
		err := syscall.Flock(fd, how|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("locking OCI layout %s: %w", dir, err)
		}
		if !told && opts.Waiting != nil {
			opts.Waiting()
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for the lock of OCI layout %s: %w", dir, ctx.Err())
		case <-deadline:
			f.Close()
			return nil, fmt.Errorf("OCI layout %s is locked by another solar run for more than %s (--lock-timeout)", dir, opts.LockTimeout)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
