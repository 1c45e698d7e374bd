// Package imagetest builds one of Solar's images for the machine's platform
// and publishes it to a test registry, for the tests that run it on a real
// node (testenv.StartNode).
package imagetest

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/imagebuild"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// Publish builds the image of cmd/name (solar, solar-agent) for this
// machine's linux platform with internal/imagebuild, publishes it to reg
// (anonymous, plain HTTP) as solar/name with the publish path, and returns
// it by digest: reg.Host/solar/name@sha256:HEX.
func Publish(t testing.TB, reg *testenv.Registry, name string) string {
	t.Helper()
	ctx := context.Background()
	res, err := imagebuild.Build(ctx, imagebuild.Options{
		Dir: testenv.Root(t), Package: "./cmd/" + name, Name: name, Version: "0.0.0-test",
		Platforms: []v1.Platform{{OS: "linux", Architecture: runtime.GOARCH}},
	})
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), name)
	desc, err := imagebuild.WriteLayout(dir, "0.0.0-test", res)
	require.NoError(t, err)
	store, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", PlainHTTP: true})
	require.NoError(t, err)
	r, err := imagebuild.Publish(ctx, dir, desc, store, name, publish.Options{})
	require.NoError(t, err)
	return reg.Host + "/solar/" + name + "@" + r.Digest
}
