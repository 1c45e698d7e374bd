package testenv

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/require"
)

// PushPodImage builds internal/testkit/podbin (a static binary that prints
// its uid and arguments, then waits for SIGTERM) into an image on an empty
// base, its entrypoint /podbin, pushes it to the anonymous registry host as
// repo:latest and returns the reference by digest (HOST/REPO@sha256:...).
// Nothing is downloaded: StartNode uses it as the pods' sandbox (pause)
// image too.
func PushPodImage(t testing.TB, host, repo string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "podbin")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./internal/testkit/podbin")
	build.Dir = Root(t)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building podbin: %s", out)
	content, err := os.ReadFile(bin)
	require.NoError(t, err)

	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "podbin", Mode: 0o755, Size: int64(len(content)), Typeflag: tar.TypeReg}))
	_, err = tw.Write(content)
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layer.Bytes())), nil
	})
	require.NoError(t, err)
	diffID, err := l.DiffID()
	require.NoError(t, err)
	img, err := mutate.AppendLayers(empty.Image, l)
	require.NoError(t, err)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		Architecture: runtime.GOARCH, OS: "linux",
		Config: v1.Config{Entrypoint: []string{"/podbin"}},
		RootFS: v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{diffID}},
	})
	require.NoError(t, err)

	ref, err := name.ParseReference(host+"/"+repo+":latest", name.Insecure)
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref, img), "pushing the pod image to %s", ref)
	digest, err := img.Digest()
	require.NoError(t, err)
	return host + "/" + repo + "@" + digest.String()
}
