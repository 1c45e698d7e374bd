package imagebuild_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/validate"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/imagebuild"
)

// hello is a tiny main module, copied to a fresh directory per build.
var hello = map[string]string{
	"go.mod":  "module example.com/hello\n\ngo 1.26\n",
	"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello from the image\") }\n",
}

// writeHello writes the module under a new directory named name and
// returns its path.
func writeHello(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for f, s := range hello {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte(s), 0o644))
	}
	return dir
}

func helloOptions(dir string) imagebuild.Options {
	return imagebuild.Options{Dir: dir, Package: ".", Name: "hello", Version: "1.2.3",
		Revision: "0123456789abcdef0123456789abcdef01234567", Source: "https://example.com/hello"}
}

// build builds the module at dir with TZ set to tz for the go command.
func build(t *testing.T, dir, tz string) *imagebuild.Result {
	t.Helper()
	if testing.Short() {
		t.Skip("compiles for two platforms; not in -short")
	}
	t.Setenv("TZ", tz)
	res, err := imagebuild.Build(context.Background(), helloOptions(dir))
	require.NoError(t, err)
	return res
}

// The same source at two paths, built under two time zones, gives the same
// index digest, and ggcr's validation passes on the index and every image.
func TestBuildIsReproducible(t *testing.T) {
	a := build(t, writeHello(t, "first-checkout"), "UTC")
	b := build(t, writeHello(t, "second/checkout/elsewhere"), "Pacific/Kiritimati")
	da, err := a.Index.Digest()
	require.NoError(t, err)
	db, err := b.Index.Digest()
	require.NoError(t, err)
	require.Equal(t, da, db, "two builds of the same source differ")
	t.Logf("index digest %s", da)

	for _, r := range []*imagebuild.Result{a, b} {
		require.NoError(t, validate.Index(r.Index))
		require.Len(t, r.Images, 2)
		for _, img := range r.Images {
			require.NoError(t, validate.Image(img.Image))
		}
	}
}

// A changed source gives a different digest: the build really depends on it.
func TestBuildFollowsSource(t *testing.T) {
	dir := writeHello(t, "src")
	a := build(t, dir, "UTC")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"),
		[]byte("package main\n\nfunc main() { println(\"changed\") }\n"), 0o644))
	b := build(t, dir, "UTC")
	da, _ := a.Index.Digest()
	db, _ := b.Index.Digest()
	require.NotEqual(t, da, db)
}
