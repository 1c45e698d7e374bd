package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tamper is one change to a good archive and what Unpack must say.
type tamper struct {
	name   string
	change func(t *testing.T, entries []tarEntry, m *Manifest) []tarEntry
	raw    func(b []byte) []byte // instead: a change of the tar's bytes
	limits Limits
	want   string
}

// blobEntry is the index of the entry of blob d.
func blobEntry(t *testing.T, entries []tarEntry, d digest.Digest) int {
	t.Helper()
	for i, e := range entries {
		if e.h.Name == "blobs/sha256/"+d.Encoded() {
			return i
		}
	}
	t.Fatalf("no blob %s", d)
	return -1
}

// setJSON replaces the JSON entry name with v.
func setJSON(t *testing.T, entries []tarEntry, name string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	for i := range entries {
		if entries[i].h.Name == name {
			entries[i].data = b
		}
	}
}

func dropIndexEntry(t *testing.T, entries []tarEntry, d digest.Digest) {
	t.Helper()
	var index ocispec.Index
	require.NoError(t, json.Unmarshal(entry(t, entries, "index.json"), &index))
	var kept []ocispec.Descriptor
	for _, x := range index.Manifests {
		if x.Digest != d {
			kept = append(kept, x)
		}
	}
	require.Less(t, len(kept), len(index.Manifests))
	index.Manifests = kept
	setJSON(t, entries, "index.json", index)
}

func extra(name string, typ byte, data string) tarEntry {
	return tarEntry{h: &tar.Header{Name: name, Typeflag: typ, Mode: 0o600, Linkname: "index.json"}, data: []byte(data)}
}

var tampers = []tamper{
	{name: "a changed byte in a blob", want: "its content's sha256 is", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		i := blobEntry(t, e, digest.FromString("hello again"))
		e[i].data = []byte("hellO again")
		return e
	}},
	{name: "a signature removed from index.json", want: "which index.json does not name", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		dropIndexEntry(t, e, m.Versions[0].Signatures[0])
		return e
	}},
	{name: "a signature removed from solar-export.json", want: "which solar-export.json does not list", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Versions[0].Signatures = nil
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "a signature's blob removed", want: "is missing from the archive", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		i := blobEntry(t, e, m.Versions[1].Signatures[0])
		return append(e[:i], e[i+1:]...)
	}},
	{name: "a signature given to another version", want: "does not sign that version's manifest", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Versions[0].Signatures, m.Versions[1].Signatures = m.Versions[1].Signatures, m.Versions[0].Signatures
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "a manifest listed but missing", want: "the manifest of a/one:0.0.2, sha256:", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		i := blobEntry(t, e, m.Versions[0].Manifest)
		return append(e[:i], e[i+1:]...)
	}},
	{name: "a version dropped from index.json", want: "solar-export.json lists a/two:0.0.1, which index.json does not name", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		var index ocispec.Index
		require.NoError(t, json.Unmarshal(entry(t, e, "index.json"), &index))
		for i, d := range index.Manifests {
			if d.Annotations[ocispec.AnnotationRefName] == "a/two:0.0.1" {
				index.Manifests[i].Annotations = map[string]string{ocispec.AnnotationRefName: "a/two:0.0.9"}
			}
		}
		setJSON(t, e, "index.json", index)
		return e
	}},
	{name: "another manifest digest", want: "a/one:0.0.2: index.json names manifest", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Versions[0].Manifest = m.Versions[1].Manifest
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "an extra file", want: "entry notes.txt: an unexpected file", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return append(e, extra("notes.txt", tar.TypeReg, "hi"))
	}},
	{name: "an extra blob", want: "is in the archive, but nothing names it", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return append(e, extra("blobs/sha256/"+digest.FromString("x").Encoded(), tar.TypeReg, "x"))
	}},
	{name: "a symlink", want: "is a symbolic link", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return append(e, extra("blobs/sha256/"+digest.FromString("x").Encoded(), tar.TypeSymlink, ""))
	}},
	{name: "a hard link", want: "is a hard link", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return append(e, extra("blobs/sha256/"+digest.FromString("x").Encoded(), tar.TypeLink, ""))
	}},
	{name: "an absolute path", want: "an absolute or empty path", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return append(e, extra("/etc/cron.d/x", tar.TypeReg, "x"))
	}},
	{name: "a path with ..", want: "a path with ..", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return append(e, extra("blobs/../../x", tar.TypeReg, "x"))
	}},
	{name: "a duplicate entry", want: "entry index.json comes twice", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return append(e, e[1])
	}},
	{name: "no solar-export.json", want: "it has no solar-export.json", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return append(e[:2], e[3:]...)
	}},
	{name: "too many entries", want: "more than 4 entries", limits: Limits{Entries: 4, Blob: 1 << 20, Total: 1 << 20, Metadata: 1 << 20}},
	{name: "a blob too large", want: "more than the limit of 10", limits: Limits{Entries: 100, Blob: 10, Total: 1 << 20, Metadata: 1 << 20}},
	{name: "too many bytes", want: "its blobs are more than the limit of 100 bytes", limits: Limits{Entries: 100, Blob: 1 << 20, Total: 100, Metadata: 1 << 20}},
	{name: "gzip", want: "gzip-compressed", raw: func(b []byte) []byte {
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}},
	{name: "data after the end", want: "data follows the end of the tar", raw: func(b []byte) []byte { return append(b, "junk"...) }},
	{name: "cut short", want: "the tar is cut short", raw: func(b []byte) []byte { return b[:len(b)/2+100] }},
	{name: "no end marker", want: "the tar is cut short: it has no end-of-archive marker", raw: func(b []byte) []byte { return b[:len(b)-1024] }},
	{name: "cut in the padding", want: "the tar is cut short", raw: func(b []byte) []byte { return b[:len(b)-1025] }},
}

// TestTamperedArchive: each change to an archive is refused, naming what is
// wrong, and leaves no temporary folder behind.
func TestTamperedArchive(t *testing.T) {
	k, _ := signingKey(t)
	file, _ := export(t, signedLayout(t, k, true))
	good, err := os.ReadFile(file)
	require.NoError(t, err)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for _, c := range tampers {
		t.Run(c.name, func(t *testing.T) {
			b := good
			switch {
			case c.raw != nil:
				b = c.raw(good)
			case c.change != nil:
				entries := readEntries(t, good)
				var m Manifest
				require.NoError(t, json.Unmarshal(entry(t, entries, ExportFile), &m))
				b = writeEntries(t, c.change(t, entries, &m))
			}
			bad := filepath.Join(t.TempDir(), "bad.tar")
			require.NoError(t, os.WriteFile(bad, b, 0o600))
			lim := DefaultLimits
			if c.limits.Entries > 0 {
				lim = c.limits
			}
			u, err := Unpack(context.Background(), bad, lim)
			if u != nil {
				u.Close()
			}
			require.ErrorIs(t, err, ErrRefused)
			t.Log(err)
			assert.Contains(t, err.Error(), c.want)
			assert.True(t, strings.HasPrefix(err.Error(), bad+": archive refused, nothing pushed"), err.Error())
			left, err := filepath.Glob(filepath.Join(tmp, "solar-archive-*"))
			require.NoError(t, err)
			assert.Empty(t, left, "the temporary folder is removed")
		})
	}
}
