// Package cachefile holds what solar's caches share: the stamp of the running
// executable, which every cache entry is bound to (a rebuilt solar starts with
// an empty cache), and a private, atomic file write into the cache folder.
//
// Caches only remember results of pure functions of their keys (an object
// passed the schemas; a chart's inputs packed at a version give these layers):
// an entry is never a belief about a registry or a cluster.
package cachefile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

var stamp = sync.OnceValue(func() string {
	h := sha256.New()
	if exe, err := os.Executable(); err == nil {
		if st, err := os.Stat(exe); err == nil {
			fmt.Fprintf(h, "%s\x00%d\x00%d", exe, st.Size(), st.ModTime().UnixNano())
		}
	}
	return hex.EncodeToString(h.Sum(nil))
})

// Executable identifies the running executable by its path, size and
// modification time.
func Executable() string { return stamp() }

// Write writes data to dir/name whole or not at all (a temporary file renamed
// over it), readable by its owner only, creating dir (0700). A cache is best
// effort: the caller may ignore the error.
func Write(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, name+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}
