package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// A split archive (solar export --split SIZE) is the bytes of one archive
// file FILE cut into parts FILE.001, FILE.002, … (three digits, more when
// there are more than 999 parts, all of one width), each of SIZE bytes but
// the last, and the list FILE.sha256 in sha256sum's format: a line
// "<hex>  <name>" per part, in order, then one for the whole, named FILE.
// On any medium, sha256sum -c FILE.sha256 --ignore-missing checks the parts
// it holds; solar push FILE.sha256 checks every part and the whole before
// it reads the archive as it reads FILE (UnpackParts).

// MinPartSize is the smallest part export cuts.
const MinPartSize = 64 << 10

// ListSuffix ends the name of a split archive's list.
const ListSuffix = ".sha256"

// splitPrefix names WriteParts' private folder beside the parts; a later run
// removes the folder of a run killed before it could (sweep).
const splitPrefix = ".solar-split-"

// Part is one part of a split archive as written.
type Part struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

var sizeRE = regexp.MustCompile(`^([0-9]+)\s*([KMG]i?B?|B)?$`)

// ParseSize reads a part size: bytes, or with K, M or G (powers of 1000)
// or KiB, MiB or GiB (1024); at least MinPartSize.
func ParseSize(s string) (int64, error) {
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("--split %q: not a size (bytes, or a number with K, M, G, KiB, MiB or GiB)", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("--split %q: %v", s, err)
	}
	unit := strings.TrimSuffix(m[2], "B")
	mult := int64(1)
	if unit != "" {
		base := int64(1000)
		if strings.HasSuffix(unit, "i") {
			base = 1024
		}
		for range strings.Index("KMG", unit[:1]) + 1 {
			mult *= base
		}
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("--split %q: too large", s)
	}
	if n *= mult; n < MinPartSize {
		return 0, fmt.Errorf("--split %q: %d bytes, less than the smallest part of %d bytes (64KiB)", s, n, MinPartSize)
	}
	return n, nil
}

// partName is the name of part i (from 1) of n of the archive base.
func partName(base string, i, n int) string {
	return fmt.Sprintf("%s.%0*d", base, max(3, len(strconv.Itoa(n))), i)
}

// WriteParts writes a split archive of the archive file name: write writes
// the whole into a file of a private folder beside name (0700, locked),
// which is cut (from its end, see cut) into parts of at most size bytes (files 0600: the archive
// holds agent tokens) and listed in name.sha256, all in that folder; then
// the parts, and the list last, are renamed beside name, and parts of an
// earlier set of that name that the new list does not name are removed (a
// stale part would make push refuse the set). On error nothing of the new
// set is left. name itself is not written.
func WriteParts(ctx context.Context, name string, size int64, write func(whole string) error) ([]Part, error) {
	if size < MinPartSize {
		return nil, fmt.Errorf("parts of %d bytes: less than the smallest of %d", size, MinPartSize)
	}
	if info, err := os.Stat(name); err == nil && info.IsDir() {
		return nil, fmt.Errorf("%s is a folder: name the archive file to write", name)
	}
	dir, base := filepath.Dir(name), filepath.Base(name)
	stale, err := siblingParts(dir, base)
	if err != nil {
		return nil, err
	}
	sweep(dir, splitPrefix, true)
	tmp, err := os.MkdirTemp(dir, splitPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", name, err)
	}
	lock, err := lockPath(tmp)
	if err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("writing %s: %w", name, err)
	}
	defer func() {
		os.RemoveAll(tmp)
		lock.Close()
	}()
	whole := filepath.Join(tmp, base)
	if err := write(whole); err != nil {
		return nil, err
	}
	parts, sum, err := cut(ctx, whole, size)
	if err != nil {
		return nil, fmt.Errorf("writing the parts of %s: %w", name, err)
	}
	if err := writeList(filepath.Join(tmp, base+ListSuffix), base, parts, sum); err != nil {
		return nil, fmt.Errorf("writing %s%s: %w", name, ListSuffix, err)
	}
	if err := place(tmp, dir, base, parts); err != nil {
		return nil, err
	}
	kept := map[string]bool{}
	for i := range parts {
		kept[parts[i].Name] = true
		parts[i].Name = filepath.Join(dir, parts[i].Name)
	}
	for _, s := range stale {
		if !kept[s] {
			os.Remove(filepath.Join(dir, s))
		}
	}
	syncDir(dir)
	return parts, nil
}

// siblingParts are the names in dir of parts of an archive base (base.N…);
// one that is not a regular file is an error: it is nothing export wrote.
func siblingParts(dir, base string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if _, ok := partNumber(base, e.Name()); !ok {
			continue
		}
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("%s is not a regular file: it is not a part export wrote; move it away", filepath.Join(dir, e.Name()))
		}
		names = append(names, e.Name())
	}
	return names, nil
}

// partNumber is the number of the part name of the archive base (base.N…).
func partNumber(base, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, base+".")
	if !ok || rest == "" || strings.Trim(rest, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil
}

// cut cuts the file whole into parts of at most size bytes beside it, and
// returns them (Name: base names) and the whole's sha256 (hex). It cuts from
// the end, truncating whole after each part: the disk holds the archive and
// one part more at most, not the archive twice.
func cut(ctx context.Context, whole string, size int64) ([]Part, string, error) {
	f, err := os.OpenFile(whole, os.O_RDWR, 0)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	all := sha256.New()
	total, err := io.Copy(all, f)
	if err != nil {
		return nil, "", err
	}
	if total == 0 {
		return nil, "", fmt.Errorf("%s is empty", whole)
	}
	n := int((total + size - 1) / size)
	parts := make([]Part, n)
	for i := n; i >= 1; i-- {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		start := int64(i-1) * size
		p := Part{Name: partName(filepath.Base(whole), i, n)}
		h := sha256.New()
		p.Size, err = writeSynced(filepath.Join(filepath.Dir(whole), p.Name), io.TeeReader(io.NewSectionReader(f, start, size), h))
		if err == nil && p.Size != min(size, total-start) {
			err = fmt.Errorf("%s changed while it was cut", whole)
		}
		if err == nil {
			err = f.Truncate(start)
		}
		if err != nil {
			return nil, "", err
		}
		p.SHA256 = "sha256:" + hex.EncodeToString(h.Sum(nil))
		parts[i-1] = p
	}
	return parts, hex.EncodeToString(all.Sum(nil)), nil
}

// writeSynced writes r into the new file name (0600) and syncs it.
func writeSynced(name string, r io.Reader) (int64, error) {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// writeList writes the list of the parts and the whole in sha256sum's format.
func writeList(name, base string, parts []Part, whole string) error {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%s  %s\n", strings.TrimPrefix(p.SHA256, "sha256:"), p.Name)
	}
	fmt.Fprintf(&b, "%s  %s\n", whole, base)
	_, err := writeSynced(name, strings.NewReader(b.String()))
	return err
}

// place renames the parts, then the list, from tmp into dir; on error it
// removes those it renamed.
func place(tmp, dir, base string, parts []Part) error {
	names := make([]string, 0, len(parts)+1)
	for _, p := range parts {
		names = append(names, p.Name)
	}
	names = append(names, base+ListSuffix)
	for i, n := range names {
		if err := os.Rename(filepath.Join(tmp, n), filepath.Join(dir, n)); err != nil {
			for _, done := range names[:i] {
				os.Remove(filepath.Join(dir, done))
			}
			return fmt.Errorf("writing %s: %w", filepath.Join(dir, n), err)
		}
	}
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}

// IsPartList says whether name is the list of a split archive (push takes
// it for the set).
func IsPartList(name string) bool {
	return strings.HasSuffix(name, ListSuffix) && len(filepath.Base(name)) > len(ListSuffix)
}

// PartHint is an error for a part of a split archive given where its list
// belongs (beside it, the list of its set), else nil.
func PartHint(name string) error {
	ext := filepath.Ext(name)
	base := strings.TrimSuffix(name, ext)
	if _, ok := partNumber(filepath.Base(base), filepath.Base(name)); !ok || len(ext) < 4 {
		return nil
	}
	if _, err := os.Lstat(base + ListSuffix); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("%s is one part of a split archive: push %s%s, the list of its parts, which checks them all", name, base, ListSuffix)
}
