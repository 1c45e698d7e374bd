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
// With -registry HOST[/PREFIX] it then publishes each image there with
// Solar's publish path (renderer/publish.PublishImage): repository
// PREFIX/NAME, version 0.0.1 and up, a new version only when the index's
// digest changed, the SBOMs as referrers, and with -signing-key a cosign
// signature of the index (the key and format `solar publish` signs charts
// with; $COSIGN_PASSWORD decrypts an encrypted key). Credentials come from
// `solar login` (the docker config).
//
// It prints one line per image: its name, the index's digest and the layout;
// with -registry, a second: its name, the version, the image by digest
// (HOST/PREFIX/NAME@sha256:HEX, what a PipelineConfig's spec.agent.image
// takes) and the action. Publishing solar also publishes the controller's
// chart, charts/solar-controller with that image by digest, as
// PREFIX/charts/solar-controller (versioned by content, signed as the
// images), and writes OUT/install/kustomization.yaml, config/controller with
// that image by digest (kubectl apply -k OUT/install). It runs from the
// repository's root. The same commit gives the same digests on any machine with
// the same Go.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/solar-pipeline/solar/internal/imagebuild"
	"github.com/solar-pipeline/solar/renderer/chart"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// images are Solar's main packages that run in containers.
var images = []string{"solar", "solar-agent", "solar-auth-callout"}

// options are the command's flags.
type options struct {
	out, version, revision, source string
	registry, caFile, keyFile      string
	plainHTTP, dryRun              bool
	platforms                      string
}

func main() {
	var o options
	flag.StringVar(&o.out, "out", "out/images", "the directory of the OCI layouts, one per image")
	flag.StringVar(&o.version, "version", "", "the images' version (annotation, and linked into the binaries)")
	flag.StringVar(&o.revision, "revision", "", "the source's commit (annotation)")
	flag.StringVar(&o.source, "source", "https://github.com/solar-pipeline/solar", "the source repository (annotation)")
	flag.StringVar(&o.platforms, "platforms", "linux/amd64,linux/arm64", "the platforms of each index, OS/ARCH, comma-separated")
	flag.StringVar(&o.registry, "registry", "", "publish each image to HOST[/PREFIX]/NAME (default: only the layouts)")
	flag.StringVar(&o.caFile, "ca-file", "", "with -registry: a PEM file of CAs to trust besides the system's")
	flag.BoolVar(&o.plainHTTP, "plain-http", false, "with -registry: speak plain HTTP (a registry on 127.0.0.1)")
	flag.StringVar(&o.keyFile, "signing-key", "", "with -registry: sign each index with this private key, as solar publish --signing-key signs charts")
	flag.BoolVar(&o.dryRun, "dry-run", false, "with -registry: say which version each image would get, push nothing")
	flag.Parse()
	names := flag.Args()
	if len(names) == 0 {
		names = images
	}
	if err := run(context.Background(), names, o); err != nil {
		fmt.Fprintln(os.Stderr, "images:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, names []string, o options) error {
	for _, name := range names {
		if !slices.Contains(images, name) {
			return fmt.Errorf("no image %q: the images are %s", name, strings.Join(images, ", "))
		}
	}
	platforms, err := parsePlatforms(o.platforms)
	if err != nil {
		return err
	}
	created, _, err := publish.SourceDateEpoch() // unset: imagebuild's default, 1970
	if err != nil {
		return err
	}
	var dst store.Store
	var popts publish.Options
	if o.registry != "" {
		if dst, popts, err = openRegistry(o); err != nil {
			return err
		}
	}
	for _, name := range names {
		res, err := imagebuild.Build(ctx, imagebuild.Options{
			Package: "./cmd/" + name, Name: name, Version: o.version, Revision: o.revision,
			Source: o.source, Created: created, Platforms: platforms,
		})
		if err != nil {
			return err
		}
		dir := filepath.Join(o.out, name)
		desc, err := imagebuild.WriteLayout(dir, o.version, res)
		if err != nil {
			return err
		}
		fmt.Printf("%s\t%s\t%s\n", name, desc.Digest, dir)
		if dst == nil {
			continue
		}
		r, err := imagebuild.Publish(ctx, dir, desc, dst, name, popts)
		if err != nil {
			return err
		}
		ref := o.registry + "/" + name + "@" + r.Digest
		fmt.Printf("%s\t%s\t%s\t%s\n", name, r.Version, ref, r.Action)
		if name != "solar" {
			continue
		}
		if err := publishControllerChart(ctx, dst, popts, o, created, r.Digest); err != nil {
			return err
		}
		if !o.dryRun {
			if err := writeInstall(filepath.Join(o.out, "install"), ref); err != nil {
				return err
			}
		}
	}
	return nil
}

// publishControllerChart publishes charts/solar-controller as
// PREFIX/charts/solar-controller, its image the solar image of digest,
// versioned by content and signed as solar publish does.
func publishControllerChart(ctx context.Context, dst store.Store, popts publish.Options, o options, created time.Time, digest string) error {
	dir := chart.Dir{FS: os.DirFS(filepath.Join("charts", "solar-controller")), AppVersion: o.version,
		Set: map[string]string{"image.repository": o.registry + "/solar", "image.digest": digest, "image.tag": ""}}
	const repo = "charts/solar-controller"
	rs, err := publish.Publish(ctx, dst, []publish.Job{dir.Job(repo, chart.Options{Created: created})}, popts)
	if err != nil {
		return err
	}
	fmt.Printf("solar-controller\t%s\toci://%s/%s\t%s\n", rs[0].Version, o.registry, repo, rs[0].Action)
	return nil
}

// writeInstall writes dir/kustomization.yaml: config/controller with the
// solar image ref (by digest) that was just published.
func writeInstall(dir, ref string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	base, err := filepath.Abs(filepath.Join("config", "controller"))
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(abs, base)
	if err != nil {
		return err
	}
	name, dgst, _ := strings.Cut(ref, "@")
	k := fmt.Sprintf(`# Written by make images: solar controller's install manifests with the
# image it published, by digest. kubectl apply -k %s
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - %s
images:
  - name: solar
    newName: %s
    digest: %s
`, dir, filepath.ToSlash(rel), name, dgst)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644)
}

// openRegistry opens -registry and reads -signing-key.
func openRegistry(o options) (store.Store, publish.Options, error) {
	host, prefix, _ := strings.Cut(o.registry, "/")
	store, err := store.NewRemote(store.RemoteOptions{Host: host, Prefix: prefix, CAFile: o.caFile, PlainHTTP: o.plainHTTP})
	if err != nil {
		return nil, publish.Options{}, err
	}
	opts := publish.Options{DryRun: o.dryRun}
	if o.keyFile != "" {
		pem, perm, err := sign.ReadKeyFile(o.keyFile)
		if err != nil {
			return nil, opts, fmt.Errorf("-signing-key %s: %w", o.keyFile, err)
		}
		if perm&0o077 != 0 {
			fmt.Fprintf(os.Stderr, "warning: %s may be read by others (mode %v): chmod 600 it\n", o.keyFile, perm)
		}
		if opts.SigningKey, err = sign.ParseKey(pem, func() ([]byte, bool) {
			p, ok := os.LookupEnv("COSIGN_PASSWORD")
			return []byte(p), ok
		}); err != nil {
			return nil, opts, fmt.Errorf("-signing-key %s: %w", o.keyFile, err)
		}
	}
	return store, opts, nil
}

// parsePlatforms reads OS/ARCH[,OS/ARCH...].
func parsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, p := range strings.Split(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(p), "/")
		if !ok || os == "" || arch == "" {
			return nil, fmt.Errorf("-platforms: %q is not OS/ARCH (linux/amd64)", p)
		}
		out = append(out, v1.Platform{OS: os, Architecture: arch})
	}
	return out, nil
}
