package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/solar-pipeline/solar/renderer/store"
)

// WriteFile exports l into the file name, whole or not at all: a temporary
// file beside it (mode 0600: the charts hold agent tokens; named
// .solar-export-…, locked while written), synced, then renamed over name.
// The temporary files of earlier runs killed before their rename are
// removed first. The summary carries the file's size and sha256.
func WriteFile(ctx context.Context, l *store.Layout, name string) (*Summary, error) {
	return WriteFileWith(ctx, l, Options{}, name)
}

// WriteFileWith is WriteFile with opts (ExportWith).
func WriteFileWith(ctx context.Context, l *store.Layout, opts Options, name string) (*Summary, error) {
	if info, err := os.Stat(name); err == nil && info.IsDir() {
		return nil, fmt.Errorf("%s is a folder: name the archive file to write", name)
	}
	dir := filepath.Dir(name)
	sweep(dir, exportPrefix, false)
	tmp, err := os.CreateTemp(dir, exportPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", name, err)
	}
	done := false
	defer func() {
		if !done {
			os.Remove(tmp.Name())
			tmp.Close()
		}
	}()
	if err := lockFile(tmp); err != nil {
		return nil, fmt.Errorf("writing %s: locking %s: %w", name, tmp.Name(), err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		return nil, err
	}
	h := sha256.New()
	counted := &countWriter{w: io.MultiWriter(tmp, h)}
	s, err := ExportWith(ctx, l, opts, counted)
	if err != nil {
		return nil, fmt.Errorf("exporting %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", name, err)
	}
	// Renamed while still open, so locked: no other run takes it for the
	// leftover of a dead one.
	if err := os.Rename(tmp.Name(), name); err != nil {
		return nil, fmt.Errorf("writing %s: %w", name, err)
	}
	done = true
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("writing %s: %w", name, err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // the rename, durable
		d.Close()
	}
	s.Size, s.SHA256 = counted.n, "sha256:"+hex.EncodeToString(h.Sum(nil))
	return s, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
