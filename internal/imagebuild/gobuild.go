package imagebuild

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// The variables the linker sets to the image's version and revision, so that
// `solar version` in the image says what the image is (a module without them
// builds all the same: the linker ignores -X of a missing variable).
const (
	versionVar = "github.com/solar-pipeline/solar/internal/buildinfo.version"
	commitVar  = "github.com/solar-pipeline/solar/internal/buildinfo.commit"
)

// goBuild compiles the main package for a platform into dir and returns the
// binary's path. The flags and environment are those that make the binary
// depend on the source and the toolchain only: -trimpath drops the checkout's
// path, -buildvcs=false the VCS state, -buildid= the build id (which hashes
// the inputs' paths), CGO_ENABLED=0 the host's C toolchain and libc; the
// microarchitecture levels are pinned and GOFLAGS and go.work ignored, so a
// developer's environment does not leak into the image.
func goBuild(ctx context.Context, o Options, p v1.Platform, dir string) (string, error) {
	out := filepath.Join(dir, p.OS+"_"+p.Architecture, o.Name)
	ldflags := "-buildid="
	if o.Version != "" {
		ldflags += " -X " + versionVar + "=" + o.Version
	}
	if o.Revision != "" {
		ldflags += " -X " + commitVar + "=" + o.Revision
	}
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags=" + ldflags, "-o", out, o.Package}
	cmd := exec.CommandContext(ctx, o.goCommand(), args...)
	cmd.Dir = o.Dir
	cmd.Env = append(os.Environ(),
		"GOOS="+p.OS, "GOARCH="+p.Architecture, "CGO_ENABLED=0",
		"GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=", "GOWORK=off", "GOEXPERIMENT=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building %s for %s: %w: %s", o.Package, platformString(p), err,
			strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func platformString(p v1.Platform) string { return p.OS + "/" + p.Architecture }
