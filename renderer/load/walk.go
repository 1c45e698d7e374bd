package load

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/diag"
)

// Skipped counts what a walk left out, besides hidden files and folders and
// those excluded on purpose.
type Skipped struct {
	// Groups counts objects of other API groups by group ("core" for v1).
	Groups map[string]int
	// Files counts walked files that hold no Kubernetes object (values
	// files, chart templates, an OCI layout's index.json).
	Files int
	// Folders counts Helm charts (a Chart.yaml) and OCI image layouts (an
	// oci-layout file).
	Folders int
}

// Objects is how many objects of other API groups were skipped.
func (s Skipped) Objects() int {
	n := 0
	for _, c := range s.Groups {
		n += c
	}
	return n
}

// String says what was skipped, for a log line; empty when nothing was.
func (s Skipped) String() string {
	var parts []string
	if n := s.Objects(); n > 0 {
		var groups []string
		for _, g := range slices.Sorted(maps.Keys(s.Groups)) {
			groups = append(groups, fmt.Sprintf("%s %d", g, s.Groups[g]))
		}
		parts = append(parts, fmt.Sprintf("%s of other API groups (%s)", english.Count(n, "object"), strings.Join(groups, ", ")))
	}
	if s.Files == 1 {
		parts = append(parts, "1 file that holds no Kubernetes objects")
	} else if s.Files > 1 {
		parts = append(parts, fmt.Sprintf("%d files that hold no Kubernetes objects", s.Files))
	}
	if s.Folders > 0 {
		parts = append(parts, english.Count(s.Folders, "Helm chart or OCI layout folder"))
	}
	return strings.Join(parts, ", ")
}

// Paths loads every Solar object in the given files and directories ("-" is
// standard input). Directories are walked recursively in lexical order for
// .yaml, .yml and .json files, leaving out hidden files and folders, Helm
// chart and OCI layout folders, what Options.Exclude and each directory's
// .solarignore name, and files that hold no Kubernetes object. A file named
// explicitly is read whatever its extension, and must hold objects. Objects of
// other API groups are skipped (with Options.Strict, they are errors).
// Objects come back in file order.
func Paths(paths []string, opts Options) ([]*Object, diag.List, Skipped) {
	w := &walker{opts: opts, skipped: Skipped{Groups: map[string]int{}}}
	for _, root := range paths {
		if root == "-" {
			start := len(w.objs)
			w.stdin()
			if opts.Each != nil {
				opts.Each(w.objs[start:])
			}
			continue
		}
		files, err := w.expand(root)
		if err != nil {
			w.problems.Errorf(root, 0, "", "%v", err)
			continue
		}
		for len(files) > 0 {
			group := files[:min(len(files), filesPerGroup)]
			files = files[len(group):]
			start := len(w.objs)
			for _, p := range w.parse(group) {
				if p.err != nil {
					w.problems.Errorf(p.name, 0, "", "%v", p.err)
					continue
				}
				w.keep(p)
			}
			if opts.Each != nil {
				opts.Each(w.objs[start:])
			}
		}
	}
	w.problems = append(w.problems, duplicates(w.objs)...)
	return w.objs, w.problems, w.skipped
}

// filesPerGroup is how many files Paths reads (on every core) before it
// hands their objects to Options.Each.
const filesPerGroup = 64

type walker struct {
	opts     Options
	objs     []*Object
	problems diag.List
	skipped  Skipped
}

type file struct {
	path   string
	root   string // the tree a symlink must stay in
	walked bool   // found in a directory, not named
}

// DefaultMaxFileSize bounds the size of one input file.
const DefaultMaxFileSize = 16 << 20

func (o Options) maxFileSize() int64 {
	if o.MaxFileSize <= 0 {
		return DefaultMaxFileSize
	}
	return o.MaxFileSize
}

// read reads one input file: a regular file, or a symlink to one inside root,
// of at most MaxFileSize bytes. Nothing else is opened: a FIFO would block, a
// device never end, a symlink out of the tree read what the input should not.
func (w *walker) read(p, root string) ([]byte, error) {
	info, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if info.Mode()&fs.ModeSymlink != 0 {
		target, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, fmt.Errorf("reading symlink: %w", err)
		}
		tree, err := filepath.EvalSymlinks(root)
		if err != nil {
			return nil, err
		}
		if rel, err := filepath.Rel(tree, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("a symlink to %s, outside %s: not read", target, root)
		}
		if info, err = os.Stat(target); err != nil {
			return nil, err
		}
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s): not read", info.Mode().Type())
	}
	max := w.opts.maxFileSize()
	if info.Size() > max {
		return nil, fmt.Errorf("the file has %d bytes, more than the limit of %d (--max-file-size)", info.Size(), max)
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readMax(f, max)
}

// readMax reads at most max bytes, failing beyond.
func readMax(r io.Reader, max int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, fmt.Errorf("more than the limit of %d bytes (--max-file-size)", max)
	}
	return data, nil
}

func (w *walker) stdin() {
	if w.opts.Stdin == nil {
		w.problems.Errorf("-", 0, "", "no standard input to read")
		return
	}
	data, err := readMax(w.opts.Stdin, w.opts.maxFileSize())
	if err != nil {
		w.problems.Errorf("-", 0, "", "reading standard input: %v", err)
		return
	}
	w.keep(w.decode(file{path: "<stdin>"}, data))
}

// parsed is one file read and decoded.
type parsed struct {
	name     string
	objs     []*Object
	problems diag.List
	skip     bool // a walked file that holds no objects
	err      error
}

// parse reads and decodes files on every core; the results are in the order
// of files.
func (w *walker) parse(files []file) []parsed {
	out := make([]parsed, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(files); i = int(next.Add(1)) - 1 {
				f := files[i]
				data, err := w.read(f.path, f.root)
				if err != nil {
					out[i] = parsed{name: f.path, err: err}
					continue
				}
				out[i] = w.decode(f, data)
			}
		})
	}
	wg.Wait()
	return out
}

// decode decodes one file's content. A walked file that holds no objects,
// or that is a template which does not load, is skipped.
func (w *walker) decode(f file, data []byte) parsed {
	objs, problems := Bytes(f.path, data, w.opts)
	skip := !holdsObjects(objs, problems) || len(problems) > 0 && isTemplate(f, data)
	return parsed{name: f.path, objs: objs, problems: problems, skip: f.walked && !w.opts.Strict && skip}
}

// isTemplate: the content has template actions ({{ }}: Helm, Go templates)
// and does not name Solar's API group, or sits in a templates/ folder below
// the walked directory. A Solar object may hold {{ }} (a valuesTemplate): a
// file that names the group is read as objects, so that its mistakes are
// reported.
func isTemplate(f file, data []byte) bool {
	if !bytes.Contains(data, []byte("{{")) {
		return false
	}
	rel, err := filepath.Rel(f.root, filepath.Dir(f.path))
	inTemplates := err == nil && slices.Contains(strings.Split(filepath.ToSlash(rel), "/"), "templates")
	return inTemplates || !bytes.Contains(data, []byte(api.Group))
}

// keep keeps the Solar objects of one file.
func (w *walker) keep(p parsed) {
	if p.skip {
		w.skipped.Files++
		return
	}
	problems := p.problems
	for _, o := range p.objs {
		if g := group(o.APIVersion); o.APIVersion != "" && g != api.Group {
			if w.opts.Strict {
				problems.Errorf(o.File, o.LineOf("apiVersion"), "apiVersion", "an object of API group %q, not a Solar object (--strict)", g)
				continue
			}
			w.skipped.Groups[g]++
			continue
		}
		w.objs = append(w.objs, o)
	}
	w.problems = append(w.problems, problems...)
}

// holdsObjects: the content has a document with apiVersion or kind, or a
// broken document (a syntax error, a duplicate field, ...) rather than
// documents that are no objects at all.
func holdsObjects(objs []*Object, problems diag.List) bool {
	if slices.ContainsFunc(objs, func(o *Object) bool { return o.APIVersion != "" || o.Kind != "" }) {
		return true
	}
	return slices.ContainsFunc(problems, func(p diag.Problem) bool { return !strings.HasPrefix(p.Message, notAnObject) })
}

// group is the API group of an apiVersion ("core" for v1).
func group(apiVersion string) string {
	g, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return "core"
	}
	return g
}

// expand lists the files of a root: itself when it is a file.
func (w *walker) expand(root string) ([]file, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []file{{path: root, root: filepath.Dir(root)}}, nil
	}
	ig := parseIgnore(w.opts.Exclude)
	if data, err := os.ReadFile(filepath.Join(root, IgnoreFile)); err == nil {
		ig = append(ig, readIgnore(data)...)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var files []file
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			if isFolderToSkip(p) {
				w.skipped.Folders++
				return fs.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), ".") || ig.match(filepath.ToSlash(rel), d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if isFolderToSkip(p) {
				w.skipped.Folders++
				return fs.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".yaml", ".yml", ".json":
			files = append(files, file{path: p, root: root, walked: true})
		}
		return nil
	})
	return files, err
}

// isFolderToSkip: a Helm chart, an OCI image layout or a layout of solar's
// (a folder of them).
func isFolderToSkip(dir string) bool {
	for _, marker := range []string{"Chart.yaml", "oci-layout", ".solar-layout"} {
		if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
			return true
		}
	}
	return false
}
