// Command images builds Solar's own container images (solar, solar-agent,
// solar-auth-callout) with internal/imagebuild and writes each as an OCI
// image layout under -out, with a CycloneDX SBOM per platform as a referrer.
// `make images` runs it from the repository's root:
//
//	SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) go run ./scripts/images \
//	  -out out/images -version 0.0.0-g1234abcd -revision $(git rev-parse HEAD) [NAME...]
//
// NAMEs choose among the images (default: all three).
//
// It prints one line per image: its name, the index's digest and the layout.
// The same commit gives the same digests on any machine with the same Go.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/solar-pipeline/solar/internal/imagebuild"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// images are Solar's main packages that run in containers.
var images = []string{"solar", "solar-agent", "solar-auth-callout"}

func main() {
	out := flag.String("out", "out/images", "the directory of the OCI layouts, one per image")
	version := flag.String("version", "", "the images' version (annotation, and linked into the binaries)")
	revision := flag.String("revision", "", "the source's commit (annotation)")
	source := flag.String("source", "https://github.com/solar-pipeline/solar", "the source repository (annotation)")
	flag.Parse()
	names := flag.Args()
	if len(names) == 0 {
		names = images
	}
	if err := run(names, *out, *version, *revision, *source); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(names []string, out, version, revision, source string) error {
	created, _, err := publish.SourceDateEpoch() // unset: imagebuild's default, 1970
	if err != nil {
		return err
	}
	for _, name := range names {
		if !slices.Contains(images, name) {
			return fmt.Errorf("no image %q: the images are %s", name, strings.Join(images, ", "))
		}
		res, err := imagebuild.Build(context.Background(), imagebuild.Options{
			Package: "./cmd/" + name, Name: name, Version: version, Revision: revision,
			Source: source, Created: created,
		})
		if err != nil {
			return err
		}
		dir := filepath.Join(out, name)
		desc, err := imagebuild.WriteLayout(dir, version, res)
		if err != nil {
			return err
		}
		fmt.Printf("%s\t%s\t%s\n", name, desc.Digest, dir)
	}
	return nil
}
