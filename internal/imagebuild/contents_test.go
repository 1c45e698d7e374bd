package imagebuild_test

import (
	"archive/tar"
	"context"
	"crypto/x509"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/imagebuild"
)

// file is one tar entry of a layer.
type file struct {
	hdr  tar.Header
	data []byte
}

func layerFiles(t *testing.T, l v1.Layer) []file {
	t.Helper()
	rc, err := l.Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	var files []file
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return files
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files = append(files, file{hdr: *hdr, data: b})
	}
}

// The image of the host's platform: its config runs the binary as 65532 with
// nothing that varies, its layers are sorted root-owned entries with fixed
// times, the CA bundle parses, and the binary runs.
func TestImageContents(t *testing.T) {
	o := helloOptions(writeHello(t, "hello"))
	o.Platforms = []v1.Platform{{OS: "linux", Architecture: runtime.GOARCH}}
	o.Created = time.Unix(1700000000, 0)
	res, err := imagebuild.Build(context.Background(), o)
	require.NoError(t, err)
	img := res.Images[0].Image

	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "65532:65532", cf.Config.User)
	assert.Equal(t, []string{"/usr/local/bin/hello"}, cf.Config.Entrypoint)
	assert.Equal(t, []string{"PATH=/usr/local/bin"}, cf.Config.Env)
	assert.Equal(t, "2023-11-14T22:13:20Z", cf.Created.UTC().Format(time.RFC3339))
	assert.Equal(t, runtime.GOARCH, cf.Architecture)

	want := map[string]string{
		"org.opencontainers.image.source":   "https://example.com/hello",
		"org.opencontainers.image.revision": "0123456789abcdef0123456789abcdef01234567",
		"org.opencontainers.image.version":  "1.2.3",
		"org.opencontainers.image.created":  "2023-11-14T22:13:20Z",
	}
	m, err := img.Manifest()
	require.NoError(t, err)
	assert.Equal(t, want, m.Annotations)
	im, err := res.Index.IndexManifest()
	require.NoError(t, err)
	assert.Equal(t, want, im.Annotations)
	require.Len(t, im.Manifests, 1)
	assert.Equal(t, "linux", im.Manifests[0].Platform.OS)

	layers, err := img.Layers()
	require.NoError(t, err)
	byName := map[string]file{}
	for _, l := range layers {
		var names []string
		for _, f := range layerFiles(t, l) {
			names = append(names, f.hdr.Name)
			assert.Zero(t, f.hdr.Uid, f.hdr.Name)
			assert.Zero(t, f.hdr.Gid, f.hdr.Name)
			assert.Empty(t, f.hdr.Uname+f.hdr.Gname, f.hdr.Name)
			assert.Equal(t, int64(0), f.hdr.ModTime.Unix(), f.hdr.Name)
			byName[f.hdr.Name] = f
		}
		assert.True(t, slices.IsSorted(names), "entries not sorted: %v", names)
	}
	assert.Contains(t, string(byName["etc/passwd"].data), "nonroot:x:65532:65532:")
	assert.Contains(t, string(byName["etc/group"].data), "nonroot:x:65532:")
	assert.Equal(t, int64(0o1777), byName["tmp/"].hdr.Mode)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(byName["etc/ssl/certs/ca-certificates.crt"].data))
	assert.Greater(t, strings.Count(string(byName["etc/ssl/certs/ca-certificates.crt"].data), "BEGIN CERTIFICATE"), 100)

	bin := byName["usr/local/bin/hello"]
	assert.Equal(t, int64(0o755), bin.hdr.Mode)
	path := filepath.Join(t.TempDir(), "hello")
	require.NoError(t, os.WriteFile(path, bin.data, 0o755))
	out, err := exec.Command(path).CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "hello from the image\n", string(out))
}
