package archive

import (
	"archive/tar"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// imageParts are the image's (Manifest.Dependencies[1]) first platform
// manifest and that manifest's first layer.
func imageParts(t *testing.T, e []tarEntry, m *Manifest) (platform, layer ocispec.Descriptor) {
	t.Helper()
	var idx anyManifest
	require.NoError(t, json.Unmarshal(e[blobEntry(t, e, m.Dependencies[1].Digest)].data, &idx))
	platform = idx.Manifests[0]
	var pm anyManifest
	require.NoError(t, json.Unmarshal(e[blobEntry(t, e, platform.Digest)].data, &pm))
	return platform, pm.Layers[0]
}

func dropBlob(t *testing.T, e []tarEntry, d digest.Digest) []tarEntry {
	i := blobEntry(t, e, d)
	return append(e[:i], e[i+1:]...)
}

// editIndex changes index.json's entries with edit.
func editIndex(t *testing.T, e []tarEntry, edit func([]ocispec.Descriptor) []ocispec.Descriptor) {
	var index ocispec.Index
	require.NoError(t, json.Unmarshal(entry(t, e, "index.json"), &index))
	index.Manifests = edit(index.Manifests)
	setJSON(t, e, "index.json", index)
}

var depTampers = []tamper{
	{name: "a changed byte in a platform manifest's layer", want: "its content's sha256 is", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		_, layer := imageParts(t, e, m)
		i := blobEntry(t, e, layer.Digest)
		e[i].data = append([]byte{e[i].data[0] ^ 1}, e[i].data[1:]...)
		return e
	}},
	{name: "a platform manifest of the index missing", want: "image src.example/team/app:1.0: the manifest 0 of its index, sha256:", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		platform, _ := imageParts(t, e, m)
		return dropBlob(t, e, platform.Digest)
	}},
	{name: "a layer missing", want: "is missing from the archive", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		_, layer := imageParts(t, e, m)
		return dropBlob(t, e, layer.Digest)
	}},
	{name: "the index missing", want: "image src.example/team/app:1.0, sha256:", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return dropBlob(t, e, m.Dependencies[1].Digest)
	}},
	{name: "a dependency in solar-export.json only", want: "solar-export.json lists image src.example/team/app:1.0, which index.json does not name", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		editIndex(t, e, func(d []ocispec.Descriptor) []ocispec.Descriptor {
			return slices.DeleteFunc(d, func(x ocispec.Descriptor) bool { return x.Digest == m.Dependencies[1].Digest })
		})
		return e
	}},
	{name: "a dependency in index.json only", want: "index.json names dependency src.example/charts/podinfo:6.7.0, which solar-export.json does not list", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Dependencies = m.Dependencies[1:]
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "another digest", want: "image src.example/team/app:1.0: index.json names sha256:", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Dependencies[1].Digest = m.Dependencies[0].Digest
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "another kind", want: "index.json says it is of kind \"image\"", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Dependencies[1].Kind = KindChart
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "a reference that does not parse", want: "dependency \"src.example/team/App:1.0!\" is not a full reference", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Dependencies[1].Reference = "src.example/team/App:1.0!"
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "a short reference", want: "dependency \"team/app:1.0\" is not a full reference", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Dependencies[1].Reference = "team/app:1.0"
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "a signature in index.json only", want: "index.json names signature sha256:", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Dependencies[1].Signatures = m.Dependencies[1].Signatures[1:]
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "a signature given to another dependency", want: "which index.json does not name as its signature", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Dependencies[0].Signatures, m.Dependencies[1].Signatures = m.Dependencies[1].Signatures, []digest.Digest{}
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "dependencies in a v1 archive", want: "is of format \"solar-export/v1\" but lists dependencies", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Format = Format
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "a dependency that is not an image", want: "not an image manifest or index", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Dependencies[1].MediaType = "application/vnd.example+json"
		setJSON(t, e, ExportFile, m)
		editIndex(t, e, func(d []ocispec.Descriptor) []ocispec.Descriptor {
			for i := range d {
				if d[i].Digest == m.Dependencies[1].Digest {
					d[i].MediaType = m.Dependencies[1].MediaType
				}
			}
			return d
		})
		return e
	}},
	{name: "an unexpected file beside the blobs", want: "an unexpected file", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return append(e, extra("blobs/sha256/"+m.Dependencies[1].Digest.Encoded()+".json", tar.TypeReg, "{}"))
	}},
	{name: "a link to a layer", want: "is a hard link", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		return append(e, extra("blobs/sha256/"+digest.FromString("y").Encoded(), tar.TypeLink, ""))
	}},
	{name: "a dependency twice in solar-export.json", want: "solar-export.json lists dependency src.example/team/app:1.0 twice", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		m.Dependencies = append(m.Dependencies, m.Dependencies[1])
		setJSON(t, e, ExportFile, m)
		return e
	}},
	{name: "a dependency twice in index.json", want: "index.json names dependency src.example/team/app:1.0 twice", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		editIndex(t, e, func(d []ocispec.Descriptor) []ocispec.Descriptor {
			for _, x := range d {
				if x.Digest == m.Dependencies[1].Digest {
					return append(d, x)
				}
			}
			return d
		})
		return e
	}},
	{name: "a dependency by a digest that is not sha256", want: "index.json names dependency \"md5:", change: func(t *testing.T, e []tarEntry, m *Manifest) []tarEntry {
		editIndex(t, e, func(d []ocispec.Descriptor) []ocispec.Descriptor {
			for i := range d {
				if d[i].Digest == m.Dependencies[1].Digest {
					d[i].Digest = "md5:0123456789abcdef0123456789abcdef"
				}
			}
			return d
		})
		return e
	}},
	{name: "a layer over the blob limit", want: "more than the limit of 100", limits: Limits{Entries: 1000, Blob: 100, Total: 1 << 20, Metadata: 1 << 20}},
}

// TestTamperedDependencies: each change to the dependencies of an archive
// (an image index among them) is refused before anything is pushed,
// naming what is wrong.
func TestTamperedDependencies(t *testing.T) {
	file, _, _ := depsArchive(t, "")
	good, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, c := range depTampers {
		t.Run(c.name, func(t *testing.T) {
			b := good
			if c.change != nil {
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
		})
	}
	// Exactly what the blobs hold unpacks; the versions' shared blob,
	// pushed once per repository, is more than that.
	var total int64
	for _, e := range readEntries(t, good) {
		if strings.HasPrefix(e.h.Name, "blobs/sha256/") {
			total += int64(len(e.data))
		}
	}
	_, err = Unpack(context.Background(), file, Limits{Entries: 1000, Blob: 1 << 20, Total: total, Metadata: 1 << 20})
	require.ErrorIs(t, err, ErrRefused)
	assert.Contains(t, err.Error(), "its versions and dependencies push")
}
