package imagebuild_test

import (
	"bytes"
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/imagebuild"
)

// The binary in Solar's own image is static (no ELF interpreter: the image
// has no libc) and says the image's version and revision, though it is built
// without VCS stamping: both are linked in.
func TestSolarImageSaysItsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles solar-auth-callout; not in -short")
	}
	const rev = "0123456789abcdef0123456789abcdef01234567"
	res, err := imagebuild.Build(context.Background(), imagebuild.Options{
		Dir: "../..", Package: "./cmd/solar-auth-callout", Name: "solar-auth-callout",
		Version: "1.2.3", Revision: rev,
		Platforms: []v1.Platform{{OS: "linux", Architecture: runtime.GOARCH}},
	})
	require.NoError(t, err)
	layers, err := res.Images[0].Image.Layers()
	require.NoError(t, err)
	var bin []byte
	for _, f := range layerFiles(t, layers[len(layers)-1]) {
		if f.hdr.Name == "usr/local/bin/solar-auth-callout" {
			bin = f.data
		}
	}
	require.NotEmpty(t, bin, "no binary in the image's last layer")
	exe, err := elf.NewFile(bytes.NewReader(bin))
	require.NoError(t, err)
	for _, p := range exe.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "the binary is linked dynamically")
	}
	path := filepath.Join(t.TempDir(), "solar-auth-callout")
	require.NoError(t, os.WriteFile(path, bin, 0o755))
	out, err := exec.Command(path, "--version").Output()
	require.NoError(t, err)
	assert.Equal(t, "solar-auth-callout 1.2.3 (commit "+rev+", "+runtime.Version()+")\n", string(out))
}
