package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggcrremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/archive"
	"github.com/solar-pipeline/solar/renderer/publish"
)

// tlsTransport trusts the PEM files cas.
func tlsTransport(t *testing.T, cas ...string) *http.Transport {
	t.Helper()
	pool := x509.NewCertPool()
	for _, ca := range cas {
		pem, err := os.ReadFile(ca)
		require.NoError(t, err)
		require.True(t, pool.AppendCertsFromPEM(pem))
	}
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
}

// tlsRepository opens HOST/PATH of the TLS registry reg, logged in.
func tlsRepository(t *testing.T, reg *testenv.Registry, path string) *remote.Repository {
	t.Helper()
	repo, err := remote.NewRepository(reg.Host + "/" + path)
	require.NoError(t, err)
	repo.Client = &auth.Client{Client: &http.Client{Transport: tlsTransport(t, reg.CAFile)},
		Credential: auth.StaticCredential(reg.Host, auth.Credential{Username: reg.Username, Password: reg.Password})}
	return repo
}

// TestExportWithDependencies: export --with-dependencies of examples/, their
// application charts in a TLS source registry that also holds the image
// the charts run (an index of two platforms, cosign-signed), carries both;
// push of the archive into a second registry (the site) relocates them
// under HOST/mirror/<source host>/ at the source's digests, and a second
// push is all unchanged. A dependency that cannot be read writes nothing
// and is named; PATHs without the flag, or the flag without them, are
// errors.
// depsWorld is the test's source registry (TLS, anonymous), whose charts
// run image, and site registry (TLS, logged in), a solar binary that
// trusts both through SSL_CERT_FILE, and examples/ pointed at the source.
type depsWorld struct {
	source, site *testenv.Registry
	dir, image   string
	examples     string
	podinfo      ocispec.Descriptor // podinfo 6.7.0 at the source
	cli          func(args ...string) (int, string, string)
}

func newDepsWorld(t *testing.T) *depsWorld {
	t.Helper()
	ctx := context.Background()
	w := &depsWorld{dir: t.TempDir()}
	w.source = testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, NoAuth: true})
	w.site = testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	cas := filepath.Join(w.dir, "cas.pem")
	var pems []byte
	for _, f := range []string{w.source.CAFile, w.site.CAFile} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		pems = append(pems, b...)
	}
	require.NoError(t, os.WriteFile(cas, pems, 0o644))
	t.Setenv("SSL_CERT_FILE", cas) // the sources are read with the system's trust
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	bin := testenv.SolarBinary(t)
	w.cli = func(args ...string) (int, string, string) {
		t.Helper()
		return testenv.RunSolar(t, bin, w.site.Password, args...)
	}
	w.image = w.source.Host + "/solar-test/app:1.0"
	chart := filepath.Join(w.dir, "chart", "templates")
	require.NoError(t, os.MkdirAll(chart, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(chart, "deployment.yaml"), fmt.Appendf(nil, appDeployment, w.image), 0o644))
	for _, c := range []struct{ path, name, version string }{
		{"stefanprodan/charts", "podinfo", "6.7.0"},
		{"stefanprodan/charts", "podinfo", "6.8.0"},
		{"prometheus-community/charts", "prometheus-node-exporter", "4.47.0"},
		{"solar/charts", "solar-agent", "0.1.0"},
	} {
		testenv.PushChart(t, w.source, filepath.Dir(chart), c.path, c.name, c.version)
	}
	var err error
	w.podinfo, err = tlsRepository(t, w.source, "stefanprodan/charts/podinfo").Resolve(ctx, "6.7.0")
	require.NoError(t, err)
	testenv.CopyExamples(t, w.dir)
	w.examples = filepath.Join(w.dir, "examples")
	for _, f := range []string{"shared/registries.yaml", "shared/components.yaml", "shared/pipeline.yaml", "alpha/releases.yaml"} {
		b, err := os.ReadFile(filepath.Join(w.examples, f))
		require.NoError(t, err)
		// The agent's chart too comes from the source (the examples name
		// it in their render registry, which this test does not serve).
		b = []byte(strings.ReplaceAll(string(b), "registry.example.com/solar/charts/solar-agent", w.source.Host+"/solar/charts/solar-agent"))
		require.NoError(t, os.WriteFile(filepath.Join(w.examples, f), []byte(strings.ReplaceAll(string(b), "ghcr.io", w.source.Host)), 0o644))
	}
	return w
}

// appDeployment is the application charts' one template: a Deployment
// of the image %q.
const appDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  selector:
    matchLabels: {app: x}
  template:
    metadata:
      labels: {app: x}
    spec:
      containers:
        - name: app
          image: %q
`

// pushIndex pushes an image index of two platforms as w.image, and a
// cosign signature of it; it returns the index.
func (w *depsWorld) pushIndex(t *testing.T) v1.ImageIndex {
	t.Helper()
	idx, err := random.Index(256, 1, 2, random.WithSource(rand.NewSource(7)))
	require.NoError(t, err)
	ref, err := name.ParseReference(w.image)
	require.NoError(t, err)
	transport := ggcrremote.WithTransport(tlsTransport(t, w.source.CAFile))
	require.NoError(t, ggcrremote.WriteIndex(ref, idx, transport))
	idxDigest, err := idx.Digest()
	require.NoError(t, err)
	sig, err := random.Image(64, 1)
	require.NoError(t, err)
	sigRef, err := name.ParseReference(w.source.Host + "/solar-test/app:" + archive.CosignTag(digest.Digest(idxDigest.String())))
	require.NoError(t, err)
	require.NoError(t, ggcrremote.Write(sigRef, sig, transport))
	return idx
}

func TestExportWithDependencies(t *testing.T) {
	needRegistry(t)
	ctx := context.Background()
	w := newDepsWorld(t)
	source, site, image, cli := w.source, w.site, w.image, w.cli
	login := []string{"--registry", site.Host + "/solar", "--ca-file", site.CAFile, "--username", site.Username, "--password-stdin"}
	out := filepath.Join(w.dir, "out")
	code, _, stderr := cli(append([]string{"render", "--no-credentials", "--out", out, w.examples}, login...)...)
	require.Equal(t, 0, code, stderr)

	bundle := filepath.Join(w.dir, "bundle.tar")
	code, _, stderr = cli("export", out, "--out", bundle, w.examples)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "read only with --with-dependencies")
	code, _, stderr = cli("export", out, "--out", bundle, "--with-dependencies")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--with-dependencies needs the input PATH")
	// The image is not there yet: named, nothing written.
	code, _, stderr = cli("export", out, w.examples, "--with-dependencies", "--out", bundle)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "image "+image+": resolving 1.0")
	assert.NoFileExists(t, bundle)

	idx := w.pushIndex(t)
	idxDigest, err := idx.Digest()
	require.NoError(t, err)
	code, stdout, stderr := cli("export", out, w.examples, "--with-dependencies", "--out", bundle, "-o", "json")
	require.Equal(t, 0, code, stderr)
	var s archive.Summary
	require.NoError(t, json.Unmarshal([]byte(stdout), &s), stdout)
	deps := map[string]archive.Dependency{}
	for _, d := range s.Dependencies {
		deps[d.Reference] = d
	}
	require.Len(t, deps, 5, "four charts and one image, each once: %+v", s.Dependencies)
	assert.Equal(t, w.podinfo.Digest, deps[source.Host+"/stefanprodan/charts/podinfo:6.7.0"].Digest)
	assert.Equal(t, idxDigest.String(), deps[image].Digest.String())
	assert.Len(t, deps[image].Signatures, 1, "its cosign signature")

	code, stdout, stderr = cli(append([]string{"push", bundle, "-o", "json"}, login...)...)
	require.Equal(t, 0, code, stderr)
	var pushed struct {
		Charts       []publish.Result    `json:"charts"`
		Dependencies []archive.Relocated `json:"dependencies"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &pushed), stdout)
	require.NotEmpty(t, pushed.Charts)
	require.Len(t, pushed.Dependencies, 5)
	for _, d := range pushed.Dependencies {
		assert.Equal(t, archive.ActionCreate, d.Action, d.Reference)
	}
	mirrored := "mirror/" + strings.ReplaceAll(source.Host, ":", "_") + "/" // mirror.Repository
	w.checkRelocated(t, mirrored, idx)

	code, stdout, stderr = cli(append([]string{"push", bundle}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^KIND +REFERENCE +SITE +ACTION$`, stdout)
	assert.Regexp(t, `(?m)^image +`+strings.ReplaceAll(image, ".", `\.`)+` +`+site.Host+`/mirror/\S+ +unchanged$`, stdout)
	assert.NotContains(t, stdout, "create")

	// The site's podinfo:6.7.0 now holds 6.8.0's chart: the push is
	// refused, naming it, and nothing is written (a dry run says so too).
	moved, err := oras.Copy(ctx, tlsRepository(t, source, "stefanprodan/charts/podinfo"), "6.8.0",
		tlsRepository(t, site, mirrored+"stefanprodan/charts/podinfo"), "6.7.0", oras.DefaultCopyOptions)
	require.NoError(t, err)
	for _, args := range [][]string{{"push", bundle}, {"push", bundle, "--dry-run"}} {
		code, _, stderr = cli(append(args, login...)...)
		assert.Equal(t, 1, code, stderr)
		assert.Contains(t, stderr, mirrored+"stefanprodan/charts/podinfo:6.7.0 is "+moved.Digest.String())
	}
	got, err := tlsRepository(t, site, mirrored+"stefanprodan/charts/podinfo").Resolve(ctx, "6.7.0")
	require.NoError(t, err)
	assert.Equal(t, moved.Digest, got.Digest, "push moves no tag it relocates")
}

// checkRelocated checks that the site holds podinfo 6.7.0 and the image
// index idx under mirrored, by the source's digests, with every platform
// manifest of the index and its cosign signature.
func (w *depsWorld) checkRelocated(t *testing.T, mirrored string, idx v1.ImageIndex) {
	t.Helper()
	ctx := context.Background()
	got, err := tlsRepository(t, w.site, mirrored+"stefanprodan/charts/podinfo").Resolve(ctx, "6.7.0")
	require.NoError(t, err)
	assert.Equal(t, w.podinfo.Digest, got.Digest, "the chart at the site, by the source's digest")
	appRepo := tlsRepository(t, w.site, mirrored+"solar-test/app")
	got, err = appRepo.Resolve(ctx, "1.0")
	require.NoError(t, err)
	idxDigest, err := idx.Digest()
	require.NoError(t, err)
	assert.Equal(t, idxDigest.String(), got.Digest.String(), "the image index at the site, by the source's digest")
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	for _, m := range im.Manifests {
		_, err := appRepo.Resolve(ctx, m.Digest.String())
		assert.NoError(t, err, "platform manifest %s", m.Digest)
	}
	_, err = appRepo.Resolve(ctx, archive.CosignTag(got.Digest))
	assert.NoError(t, err, "its cosign signature beside it")
}
