package imagebuild

import (
	"archive/tar"
	"bytes"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/solar-pipeline/solar/renderer/publish"
)

// entry is one file of a layer, or a directory when path ends in a slash;
// every parent directory is added with mode 0755.
type entry struct {
	path string // slash-separated, without a leading slash
	mode int64
	data []byte
}

// layer is a gzip OCI layer of the entries: every parent directory (0755)
// and file in lexical order, owner 0:0, modification time publish.Epoch, so
// that the same files give the same digest on any machine. ggcr compresses
// it with Go's gzip at a fixed level, which is deterministic for a Go version.
func layer(entries []entry) (v1.Layer, error) {
	b, err := tarBytes(entries)
	if err != nil {
		return nil, err
	}
	open := func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	l, err := tarball.LayerFromOpener(open, tarball.WithMediaType(types.OCILayer))
	return plainLayer{l}, err
}

// plainLayer hides the tarball layer's Descriptor method, whose empty
// (non-nil) annotations end up in the manifest ggcr holds but not in the JSON
// it writes, so that validate.Image would find the two differ.
type plainLayer struct{ v1.Layer }

func tarBytes(entries []entry) ([]byte, error) {
	byName := map[string]entry{}
	for _, e := range entries {
		byName[e.path] = e
		for d := path.Dir(strings.TrimSuffix(e.path, "/")); d != "."; d = path.Dir(d) {
			if _, ok := byName[d+"/"]; !ok {
				byName[d+"/"] = entry{path: d + "/", mode: 0o755}
			}
		}
	}
	names := slices.Sorted(maps.Keys(byName))

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		e := byName[n]
		hdr := &tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: e.mode, Size: int64(len(e.data)),
			ModTime: publish.Epoch, Format: tar.FormatPAX}
		if strings.HasSuffix(n, "/") {
			hdr.Typeflag = tar.TypeDir
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
