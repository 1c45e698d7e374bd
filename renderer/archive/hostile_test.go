package archive

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

func addBlob(entries []tarEntry, b []byte) ([]tarEntry, ocispec.Descriptor) {
	d := digest.FromBytes(b)
	for _, e := range entries {
		if e.h.Name == "blobs/sha256/"+d.Encoded() {
			return entries, ocispec.Descriptor{Digest: d, Size: int64(len(b))}
		}
	}
	return append(entries, tarEntry{h: &tar.Header{Name: "blobs/sha256/" + d.Encoded(), Typeflag: tar.TypeReg, Mode: 0o600}, data: b}),
		ocispec.Descriptor{Digest: d, Size: int64(len(b))}
}

// referrerOf builds a "signature" manifest of subject with the given layers.
func referrerOf(t *testing.T, entries []tarEntry, subject ocispec.Descriptor, layers []ocispec.Descriptor) ([]tarEntry, ocispec.Descriptor) {
	entries, _ = addBlob(entries, ocispec.DescriptorEmptyJSON.Data)
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: api.MediaTypeSigstoreBundle, Config: ocispec.DescriptorEmptyJSON, Layers: layers,
		Subject: &ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}}
	raw, err := json.Marshal(m)
	require.NoError(t, err)
	entries, d := addBlob(entries, raw)
	d.MediaType, d.ArtifactType = ocispec.MediaTypeImageManifest, api.MediaTypeSigstoreBundle
	return entries, d
}

// rewrite applies: signature old of version 0 is replaced by (or, with
// old=="", added) newSig; index.json and solar-export.json agree.
func rewrite(t *testing.T, entries []tarEntry, old digest.Digest, newSig ocispec.Descriptor) []tarEntry {
	var index ocispec.Index
	require.NoError(t, json.Unmarshal(entry(t, entries, "index.json"), &index))
	var m Manifest
	require.NoError(t, json.Unmarshal(entry(t, entries, ExportFile), &m))
	if old != "" {
		index.Manifests = slices.DeleteFunc(index.Manifests, func(d ocispec.Descriptor) bool { return d.Digest == old })
		m.Versions[0].Signatures = slices.DeleteFunc(m.Versions[0].Signatures, func(d digest.Digest) bool { return d == old })
		entries = slices.DeleteFunc(entries, func(e tarEntry) bool { return e.h.Name == "blobs/sha256/"+old.Encoded() })
	}
	index.Manifests = append(index.Manifests, newSig)
	m.Versions[0].Signatures = append(m.Versions[0].Signatures, newSig.Digest)
	slices.Sort(m.Versions[0].Signatures)
	setJSON(t, entries, "index.json", index)
	setJSON(t, entries, ExportFile, m)
	return entries
}

func versionDesc(t *testing.T, entries []tarEntry) (Manifest, ocispec.Descriptor, []byte) {
	var m Manifest
	require.NoError(t, json.Unmarshal(entry(t, entries, ExportFile), &m))
	v := m.Versions[0]
	var index ocispec.Index
	require.NoError(t, json.Unmarshal(entry(t, entries, "index.json"), &index))
	var subject ocispec.Descriptor
	for _, d := range index.Manifests {
		if d.Digest == v.Manifest {
			subject = d
		}
	}
	// the legit bundle
	var sm ocispec.Manifest
	require.NoError(t, json.Unmarshal(entry(t, entries, "blobs/sha256/"+v.Signatures[0].Encoded()), &sm))
	bundle := entry(t, entries, "blobs/sha256/"+sm.Layers[0].Digest.Encoded())
	return m, ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}, bundle
}

// TestCraftedSignatures: push --key carries only the signatures that
// verify (a referrer of other content beside a good signature stays
// behind), and refuses, before writing, signatures the verifiers Flux uses
// would not read: a bundle re-wrapped with a second layer, a bundle whose
// media type says an older version.
func TestCraftedSignatures(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts a registry")
	}
	ctx := context.Background()
	k, v := signingKey(t)
	file, _ := export(t, signedLayout(t, k, false))
	good, err := os.ReadFile(file)
	require.NoError(t, err)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	cases := []struct {
		name    string
		change  func(entries []tarEntry) []tarEntry
		refused bool
	}{
		{"junk beside the signature", func(entries []tarEntry) []tarEntry {
			_, subject, _ := versionDesc(t, entries)
			entries, junk := addBlob(entries, []byte("#!/bin/sh\necho content nobody signed\n"))
			junk.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
			entries, sig := referrerOf(t, entries, subject, []ocispec.Descriptor{junk})
			return rewrite(t, entries, "", sig)
		}, false},
		{"two layers", func(entries []tarEntry) []tarEntry {
			m, subject, bundle := versionDesc(t, entries)
			entries, bl := addBlob(entries, bundle)
			bl.MediaType = api.MediaTypeSigstoreBundle
			entries, x := addBlob(entries, []byte("x"))
			x.MediaType = "text/plain"
			entries, sig := referrerOf(t, entries, subject, []ocispec.Descriptor{bl, x})
			return rewrite(t, entries, m.Versions[0].Signatures[0], sig)
		}, true},
		{"bundle v0.2", func(entries []tarEntry) []tarEntry {
			m, subject, bundle := versionDesc(t, entries)
			var b map[string]any
			require.NoError(t, json.Unmarshal(bundle, &b))
			b["mediaType"] = "application/vnd.dev.sigstore.bundle+json;version=0.2"
			nb, err := json.Marshal(b)
			require.NoError(t, err)
			entries, bl := addBlob(entries, nb)
			bl.MediaType = api.MediaTypeSigstoreBundle
			entries, sig := referrerOf(t, entries, subject, []ocispec.Descriptor{bl})
			old := digest.FromBytes(bundle).Encoded()
			entries = slices.DeleteFunc(entries, func(e tarEntry) bool { return e.h.Name == "blobs/sha256/"+old })
			return rewrite(t, entries, m.Versions[0].Signatures[0], sig)
		}, true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			entries := c.change(readEntries(t, good))
			crafted := filepath.Join(t.TempDir(), "crafted.tar")
			require.NoError(t, os.WriteFile(crafted, writeEntries(t, entries), 0o600))
			u, err := Unpack(ctx, crafted, DefaultLimits)
			require.NoError(t, err)
			defer u.Close()
			remote, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: fmt.Sprint("p", i), Username: reg.Username, Password: reg.Password, PlainHTTP: true})
			require.NoError(t, err)
			_, err = publish.PushLayout(ctx, u, remote, publish.Options{Verifier: v}, nil)
			if c.refused {
				require.ErrorIs(t, err, publish.ErrSignature)
				return
			}
			require.NoError(t, err)
			m, subject, _ := versionDesc(t, entries)
			repo, err := remote.Repository(ctx, m.Versions[0].Repository)
			require.NoError(t, err)
			refs, err := registry.Referrers(ctx, repo.(content.ReadOnlyGraphStorage), subject, "")
			require.NoError(t, err)
			require.Len(t, refs, 1, "only the signature that verifies is carried")
			require.NoError(t, v.Check(ctx, repo.(sign.Target), sign.Subject{Repository: m.Versions[0].Repository, Version: m.Versions[0].Version, Manifest: subject}))
		})
	}
}

// TestAmplifiedArchive: one blob in the archive named by 40 repositories
// is unpacked once but pushed 40 times: the bytes pushed count against the
// limit.
func TestAmplifiedArchive(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "out")
	var jobs []publish.Job
	for i := range 40 {
		jobs = append(jobs, textJob(fmt.Sprintf("r/app-%d", i), string(make([]byte, 1<<20))))
	}
	l, err := store.OpenLayout(ctx, dir, store.LayoutOptions{})
	require.NoError(t, err)
	_, err = publish.Publish(ctx, l, jobs, publish.Options{})
	require.NoError(t, err)
	require.NoError(t, l.Save(ctx))
	require.NoError(t, l.Close())
	file, _ := export(t, dir)
	lim := DefaultLimits
	lim.Total = 2 << 20 // the archive's blobs fit
	_, err = Unpack(ctx, file, lim)
	require.ErrorIs(t, err, ErrRefused)
	require.Contains(t, err.Error(), "into their repositories (shared blobs once per repository)")
}

// TestTarExtensions: a 10 KiB tar whose entry is a PAX sparse file of 64
// MiB (testdata/sparse.tar, made with Python's tarfile) is refused before
// its data is read.
func TestTarExtensions(t *testing.T) {
	f, err := os.Open("testdata/sparse.tar")
	require.NoError(t, err)
	defer f.Close()
	_, err = read(f, t.TempDir(), DefaultLimits)
	require.ErrorIs(t, err, ErrRefused)
	require.Contains(t, err.Error(), "tar extensions")
}
