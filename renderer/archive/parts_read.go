package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
)

// maxList bounds the list of a split archive: a line is at most 322 bytes
// (a name of 255), and the parts of MinPartSize of the largest archive push
// reads (DefaultLimits: 8 GiB and some) are about 135,000 lines.
const maxList = 64 << 20

// partSet is the list of a split archive read: its parts in order, each
// with the sha256 (hex) the list gives, and the whole's.
type partSet struct {
	dir, base string
	parts     []listedPart
	whole     string
	limit     int64 // bytes of all parts together
}

type listedPart struct {
	name, sum string
	size      int64
	dev, ino  uint64 // of the file checked: the one read after
}

var listLine = regexp.MustCompile(`^([0-9a-f]{64})  (.+)$`)

// UnpackParts is Unpack of a split archive, named by its list (FILE.sha256):
// the list is read bounded and strict, then every part is checked (listed,
// present, a regular file and no link, its size and sha256 as listed) and
// the whole's sha256 too, all before anything is read as an archive; a
// part of the set's name (FILE.N…) that the list does not name is refused
// too. Then the parts, one after the other, are read as Unpack reads a
// file, every check of Unpack holding for the whole, and each part is
// checked again as it is read. What is wrong is refused (ErrRefused),
// naming each part it concerns.
func UnpackParts(ctx context.Context, list string, lim Limits) (*Unpacked, error) {
	ps, err := readList(list)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", list, err)
	}
	if err := ps.check(ctx, lim); err != nil {
		return nil, fmt.Errorf("%s: %w", list, err)
	}
	r := &partsReader{ps: ps, whole: sha256.New()}
	defer r.close()
	return unpack(ctx, r, list, lim)
}

// openNoLink opens name to read, refusing a link, and anything but a
// regular file (without blocking on a FIFO).
func openNoLink(name string) (*os.File, *syscall.Stat_t, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, fmt.Errorf("%s is a symbolic link: refused", filepath.Base(name))
	}
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, fmt.Errorf("%s is missing", filepath.Base(name))
	}
	if err != nil {
		return nil, nil, err
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", filepath.Base(name))
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, info.Sys().(*syscall.Stat_t), nil
}

// readList reads the list, bounded, and checks its form: sha256sum's lines
// "<hex>  <name>", the parts FILE.001 … in order without a gap, all of one
// width, then one line of the whole, FILE.
func readList(list string) (*partSet, error) {
	if !IsPartList(list) {
		return nil, refuse("the list of a split archive is named FILE%s", ListSuffix)
	}
	f, _, err := openNoLink(list)
	if err != nil {
		return nil, refuse("%v", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxList+1))
	if err != nil {
		return nil, refuse("reading the list: %v", err)
	}
	if len(b) > maxList {
		return nil, refuse("the list is more than %d bytes: not a list of parts", maxList)
	}
	base := strings.TrimSuffix(filepath.Base(list), ListSuffix)
	ps := &partSet{dir: filepath.Dir(list), base: base}
	if !bytes.HasSuffix(b, []byte("\n")) {
		return nil, refuse("the list does not end with a newline: cut short?")
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var problems []string
	width := max(3, len(fmt.Sprint(len(lines)-1)))
	for i, line := range lines {
		m := listLine.FindStringSubmatch(line)
		switch {
		case m == nil:
			problems = append(problems, fmt.Sprintf("line %d: not \"<sha256 hex>  <name>\"", i+1))
		case i == len(lines)-1:
			if m[2] != base {
				problems = append(problems, fmt.Sprintf("line %d: the last line is the whole's, %s, not %q", i+1, base, m[2]))
			}
			ps.whole = m[1]
		case m[2] != fmt.Sprintf("%s.%0*d", base, width, i+1):
			problems = append(problems, fmt.Sprintf("line %d: %q where the list names part %s.%0*d (the parts of %s in order, then the whole)", i+1, m[2], base, width, i+1, base))
		default:
			ps.parts = append(ps.parts, listedPart{name: m[2], sum: m[1]})
		}
	}
	if len(lines) < 2 {
		problems = append(problems, "the list names no part")
	}
	if len(problems) > 0 {
		return nil, refuse("the list: %s", strings.Join(problems, "; "))
	}
	return ps, nil
}

// maxWhole bounds a whole archive that lim lets through: its blobs and
// metadata, a header and padding per entry, and the zero padding read
// accepts after the end.
func maxWhole(lim Limits) int64 {
	return lim.Total + 3*lim.Metadata + int64(lim.Entries+2)*1024 + 2<<20
}

// check checks every part and the whole against the list, reading each part
// once; it reports every part that is wrong.
func (ps *partSet) check(ctx context.Context, lim Limits) error {
	var problems []string
	if names, err := siblingParts(ps.dir, ps.base); err != nil {
		problems = append(problems, err.Error())
	} else {
		listed := map[string]bool{}
		for _, p := range ps.parts {
			listed[p.name] = true
		}
		for _, n := range names {
			if !listed[n] {
				problems = append(problems, fmt.Sprintf("%s is not in the list: a part of another set? move it away", n))
			}
		}
	}
	whole, budget := sha256.New(), maxWhole(lim)
	ps.limit = budget
	for i := range ps.parts {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := ps.checkPart(&ps.parts[i], whole, &budget); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) == 0 && hex.EncodeToString(whole.Sum(nil)) != ps.whole {
		problems = append(problems, fmt.Sprintf("the parts together have a sha256 other than the list gives for %s", ps.base))
	}
	if len(problems) > 0 {
		return refuse("%s", strings.Join(problems, "; "))
	}
	return nil
}

// checkPart reads one part, within what is left of budget, into whole and
// checks its sha256.
func (ps *partSet) checkPart(p *listedPart, whole hash.Hash, budget *int64) error {
	f, st, err := openNoLink(filepath.Join(ps.dir, p.name))
	if err != nil {
		return err
	}
	defer f.Close()
	if st.Size > *budget {
		return fmt.Errorf("%s: the parts so far are more than %d bytes, the largest archive push reads", p.name, ps.limit)
	}
	*budget -= st.Size
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(h, whole), io.LimitReader(f, st.Size))
	if err != nil {
		return fmt.Errorf("reading %s: %v", p.name, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != p.sum {
		return fmt.Errorf("%s: its sha256 is %s, the list says %s (damaged, cut short or another part)", p.name, got, p.sum)
	}
	p.size, p.dev, p.ino = n, uint64(st.Dev), st.Ino
	return nil
}

// partsReader reads the parts one after the other, each opened again
// (the same file as checked: device and inode) and checked again against
// the list as it is read to its end, and the whole at the end: a part
// changed since the check is refused, not read.
type partsReader struct {
	ps    *partSet
	i     int
	cur   *os.File
	h     hash.Hash
	n     int64
	whole hash.Hash
}

func (r *partsReader) Read(b []byte) (int, error) {
	for {
		if r.cur == nil {
			if r.i == len(r.ps.parts) {
				if hex.EncodeToString(r.whole.Sum(nil)) != r.ps.whole {
					return 0, refuse("the parts changed while they were read")
				}
				return 0, io.EOF
			}
			if err := r.open(); err != nil {
				return 0, err
			}
		}
		n, err := r.cur.Read(b)
		r.h.Write(b[:n])
		r.whole.Write(b[:n])
		r.n += int64(n)
		if errors.Is(err, io.EOF) {
			err = r.next()
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
}

func (r *partsReader) open() error {
	p := r.ps.parts[r.i]
	f, st, err := openNoLink(filepath.Join(r.ps.dir, p.name))
	if err == nil && (uint64(st.Dev) != p.dev || st.Ino != p.ino) {
		f.Close()
		err = fmt.Errorf("%s was replaced since it was checked", p.name)
	}
	if err != nil {
		return refuse("%v", err)
	}
	r.cur, r.h, r.n = f, sha256.New(), 0
	return nil
}

// close closes the part being read, if any (Unpack stopped early).
func (r *partsReader) close() {
	if r.cur != nil {
		r.cur.Close()
	}
}

// next closes the part read to its end and checks it again.
func (r *partsReader) next() error {
	p := r.ps.parts[r.i]
	r.cur.Close()
	r.cur = nil
	r.i++
	if r.n != p.size || hex.EncodeToString(r.h.Sum(nil)) != p.sum {
		return refuse("%s changed since it was checked", p.name)
	}
	return nil
}
