package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sharedArchive is an archive of n versions (r/app-000 … at 0.0.1, unsigned)
// whose manifests are one manifest, naming one config and the one layer
// layer: one blob each, named n times.
func sharedArchive(t *testing.T, n int, layer []byte) string {
	t.Helper()
	dir := func(name string) tarEntry {
		return tarEntry{h: &tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: dirMode}}
	}
	file := func(name string) tarEntry {
		return tarEntry{h: &tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: fileMode}}
	}
	entries := []tarEntry{file("oci-layout"), file("index.json"), file(ExportFile), dir("blobs/"), dir("blobs/sha256/")}
	entries[0].data = []byte(`{"imageLayoutVersion":"1.0.0"}`)
	entries, config := addBlob(entries, []byte(`{}`))
	config.MediaType = "application/vnd.example.config.v1+json"
	entries, l := addBlob(entries, layer)
	l.MediaType = "text/plain"
	raw, err := json.Marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2},
		MediaType: ocispec.MediaTypeImageManifest, Config: config, Layers: []ocispec.Descriptor{l}})
	require.NoError(t, err)
	entries, m := addBlob(entries, raw)
	index := ocispec.Index{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageIndex}
	export := Manifest{Format: Format}
	for i := range n {
		repo := fmt.Sprintf("r/app-%03d", i)
		index.Manifests = append(index.Manifests, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest,
			Digest: m.Digest, Size: m.Size, Annotations: map[string]string{ocispec.AnnotationRefName: repo + ":0.0.1"}})
		export.Versions = append(export.Versions, Version{Repository: repo, Version: "0.0.1", Manifest: m.Digest, Signatures: []digest.Digest{}})
	}
	setJSON(t, entries, "index.json", index)
	setJSON(t, entries, ExportFile, export)
	name := filepath.Join(t.TempDir(), "shared.tar")
	require.NoError(t, os.WriteFile(name, writeEntries(t, entries), 0o600))
	return name
}

// diskBytes is the size of the regular files under dir, each file (inode)
// once: what was written there.
func diskBytes(t *testing.T, dir string) int64 {
	t.Helper()
	seen := map[uint64]bool{}
	var n int64
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if ino := inode(info); !seen[ino] {
			seen[ino] = true
			n += info.Size()
		}
		return nil
	}))
	return n
}

// TestSharedBlobsUnpackOnce (issue 44, A1): an archive of 40 versions
// whose manifests name one 1 MiB layer (the archive: about 1 MiB) writes
// each blob once into the temporary directory, not once per repository (40
// MiB before), never more than the archive's size; pushed, every
// repository still reads the shared blob.
func TestSharedBlobsUnpackOnce(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	layer := bytes.Repeat([]byte{'a'}, 1<<20)
	file := sharedArchive(t, 40, layer)
	info, err := os.Stat(file)
	require.NoError(t, err)
	u, err := Unpack(context.Background(), file, DefaultLimits)
	require.NoError(t, err)
	defer u.Close()
	written := diskBytes(t, tmp)
	t.Logf("archive %d bytes, unpacked %d bytes", info.Size(), written)
	assert.LessOrEqual(t, written, info.Size(), "unpacked no more than the archive's size")
	assert.Less(t, written, int64(2*len(layer)), "the shared layer once")

	names, err := u.Repositories(context.Background(), "r/")
	require.NoError(t, err)
	require.Len(t, names, 40)
	for _, name := range []string{names[0], names[39]} {
		repo, err := u.Repository(context.Background(), name)
		require.NoError(t, err)
		desc, err := repo.Resolve(context.Background(), "0.0.1")
		require.NoError(t, err)
		m, err := readManifest(context.Background(), repo, desc)
		require.NoError(t, err)
		rc, err := repo.Fetch(context.Background(), m.Layers[0])
		require.NoError(t, err)
		var buf bytes.Buffer
		_, err = buf.ReadFrom(rc)
		rc.Close()
		require.NoError(t, err)
		assert.Equal(t, digest.FromBytes(layer), digest.FromBytes(buf.Bytes()), name)
	}
}

func inode(info fs.FileInfo) uint64 {
	return info.Sys().(*syscall.Stat_t).Ino
}
