package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// staged is an archive read: its blobs in files of dir, named by their hex
// digest and each checked against it, and its metadata files.
type staged struct {
	dir   string
	blobs map[digest.Digest]int64 // digest -> size
	meta  map[string][]byte       // oci-layout, index.json, solar-export.json
}

var blobName = regexp.MustCompile(`^blobs/sha256/([0-9a-f]{64})$`)

// refuse is an error naming what is wrong with the archive.
func refuse(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRefused}, args...)...)
}

// read reads the tar r, bounded by lim, into dir; every blob's sha256 is
// checked against its name. Anything but the names of the package's doc
// (no links, no other file) is refused.
func read(r io.Reader, dir string, lim Limits) (*staged, error) {
	br := bufio.NewReader(r)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return nil, refuse("it is gzip-compressed: gunzip it first (solar export writes a plain tar)")
	}
	st := &staged{dir: dir, blobs: map[digest.Digest]int64{}, meta: map[string][]byte{}}
	tail := &zeroTail{r: br}
	tr := tar.NewReader(tail)
	seen := map[string]bool{}
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			if tail.zeros < 1024 {
				return nil, refuse("the tar is cut short: it has no end-of-archive marker")
			}
			break
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, refuse("the tar is cut short")
		}
		if err != nil {
			return nil, refuse("not a readable tar: %v", err)
		}
		if n >= lim.Entries {
			return nil, refuse("more than %d entries", lim.Entries)
		}
		if err := checkEntry(h, seen); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		if m := blobName.FindStringSubmatch(h.Name); m != nil {
			if h.Size > lim.Blob {
				return nil, refuse("%s is %d bytes, more than the limit of %d", h.Name, h.Size, lim.Blob)
			}
			if total += h.Size; total > lim.Total {
				return nil, refuse("its blobs are more than the limit of %d bytes", lim.Total)
			}
			if err := st.blob(tr, m[1], h.Size); err != nil {
				return nil, err
			}
			continue
		}
		if h.Size > lim.Metadata {
			return nil, refuse("%s is %d bytes, more than the limit of %d", h.Name, h.Size, lim.Metadata)
		}
		b, err := io.ReadAll(io.LimitReader(tr, h.Size))
		if err != nil {
			return nil, refuse("reading %s: %v", h.Name, err)
		}
		st.meta[h.Name] = b
	}
	// What follows the end of the tar is its zero padding, nothing else.
	rest, err := io.ReadAll(io.LimitReader(br, 1<<20+1))
	if err != nil {
		return nil, refuse("reading past its end: %v", err)
	}
	if len(rest) > 1<<20 || len(bytes.Trim(rest, "\x00")) > 0 {
		return nil, refuse("data follows the end of the tar")
	}
	return st, nil
}

// checkEntry refuses an entry that is not a regular file (or one of the two
// blob folders) at a name of the layout, or that comes twice.
func checkEntry(h *tar.Header, seen map[string]bool) error {
	name := h.Name
	switch {
	case name == "" || strings.HasPrefix(name, "/"):
		return refuse("entry %q: an absolute or empty path", name)
	case slices.Contains(strings.Split(name, "/"), ".."):
		return refuse("entry %q: a path with ..", name)
	case h.Typeflag == tar.TypeSymlink:
		return refuse("entry %s is a symbolic link (to %q): refused", name, h.Linkname)
	case h.Typeflag == tar.TypeLink:
		return refuse("entry %s is a hard link (to %q): refused", name, h.Linkname)
	case seen[name]:
		return refuse("entry %s comes twice", name)
	case len(h.PAXRecords) > 0 || h.Format&tar.FormatGNU != 0:
		// Export writes plain ustar; PAX and GNU extensions (sparse
		// files among them) could make a small entry read as a large one.
		return refuse("entry %s uses tar extensions (PAX or GNU) that solar export never writes", name)
	}
	seen[name] = true
	if h.Typeflag == tar.TypeDir {
		if name == "blobs/" || name == "blobs/sha256/" {
			return nil
		}
		return refuse("entry %s: an unexpected folder", name)
	}
	if h.Typeflag != tar.TypeReg {
		return refuse("entry %s is not a regular file (tar type %q)", name, h.Typeflag)
	}
	if path.Clean(name) != name {
		return refuse("entry %q: not a clean path", name)
	}
	switch {
	case name == ocispec.ImageLayoutFile, name == ocispec.ImageIndexFile, name == ExportFile:
		return nil
	case blobName.MatchString(name):
		return nil
	}
	return refuse("entry %s: an unexpected file (an archive holds only oci-layout, index.json, %s and blobs/sha256/<hex>)", name, ExportFile)
}

// blob copies one blob into the staging folder and checks its sha256.
func (st *staged) blob(r io.Reader, hexDigest string, size int64) error {
	f, err := os.OpenFile(filepath.Join(st.dir, hexDigest), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(r, size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return refuse("the tar is cut short in blobs/sha256/%s", hexDigest)
	case err != nil:
		return refuse("reading blobs/sha256/%s: %v", hexDigest, err)
	case n != size:
		return refuse("blobs/sha256/%s is cut short (%d of %d bytes)", hexDigest, n, size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != hexDigest {
		return refuse("blobs/sha256/%s: its content's sha256 is %s (changed or damaged)", hexDigest, got)
	}
	st.blobs[digest.NewDigestFromEncoded(digest.SHA256, hexDigest)] = size
	return nil
}

// open opens a staged blob.
func (st *staged) open(d digest.Digest) (*os.File, error) {
	return os.Open(filepath.Join(st.dir, d.Encoded()))
}

// manifest reads a staged manifest, bounded.
func (st *staged) manifest(d ocispec.Descriptor) (*ocispec.Manifest, error) {
	if d.Size > maxManifest {
		return nil, fmt.Errorf("manifest %s is %d bytes: too large", d.Digest, d.Size)
	}
	b, err := os.ReadFile(filepath.Join(st.dir, d.Digest.Encoded()))
	if err != nil {
		return nil, err
	}
	return decodeManifest(d, b)
}

// zeroTail counts the zero bytes that end what was read so far: a tar read
// to its end has read its end-of-archive marker, two zero blocks, last.
type zeroTail struct {
	r     io.Reader
	zeros int
}

func (z *zeroTail) Read(p []byte) (int, error) {
	n, err := z.r.Read(p)
	if n > 0 {
		trimmed := len(bytes.TrimRight(p[:n], "\x00"))
		if trimmed == 0 {
			z.zeros += n
		} else {
			z.zeros = n - trimmed
		}
	}
	return n, err
}
