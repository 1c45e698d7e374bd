package sign

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxKeyFile bounds a key file read: a PEM key is a few hundred bytes.
const MaxKeyFile = 64 << 10

// ReadKeyFile reads a key file (a private or a public key), bounded: a
// regular file of at most MaxKeyFile bytes, nothing else. perm is its
// permission bits: a private key that its group or others may read
// (perm&0o077) is worth a warning.
func ReadKeyFile(name string) (b []byte, perm fs.FileMode, err error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !info.Mode().IsRegular() {
		return nil, 0, errors.New("not a regular file")
	}
	b, err = io.ReadAll(io.LimitReader(f, MaxKeyFile+1))
	if err == nil && len(b) > MaxKeyFile {
		err = fmt.Errorf("larger than %d KiB: not a key", MaxKeyFile>>10)
	}
	if err != nil {
		return nil, 0, err
	}
	return b, info.Mode().Perm(), nil
}
