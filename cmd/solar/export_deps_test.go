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
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggcrremote "github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"
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
func TestExportWithDependencies(t *testing.T) {
	needRegistry(t)
	ctx := context.Background()
	source := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true, NoAuth: true})
	site := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	dir := t.TempDir()
	cas := filepath.Join(dir, "cas.pem")
	var pems []byte
	for _, f := range []string{source.CAFile, site.CAFile} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		pems = append(pems, b...)
	}
	require.NoError(t, os.WriteFile(cas, pems, 0o644))
	t.Setenv("SSL_CERT_FILE", cas) // the sources are read with the system's trust
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	bin := testenv.SolarBinary(t)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return testenv.RunSolar(t, bin, site.Password, args...)
	}

	image := source.Host + "/solar-test/app:1.0"
	chart := filepath.Join(dir, "chart", "templates")
	require.NoError(t, os.MkdirAll(chart, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(chart, "deployment.yaml"), fmt.Appendf(nil, `apiVersion: apps/v1
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
`, image), 0o644))
	for _, c := range []struct{ path, name, version string }{
		{"stefanprodan/charts", "podinfo", "6.7.0"},
		{"stefanprodan/charts", "podinfo", "6.8.0"},
		{"prometheus-community/charts", "prometheus-node-exporter", "4.47.0"},
		{"solar/charts", "solar-agent", "0.1.0"},
	} {
		testenv.PushChart(t, source, filepath.Dir(chart), c.path, c.name, c.version)
	}
	podinfo, err := tlsRepository(t, source, "stefanprodan/charts/podinfo").Resolve(ctx, "6.7.0")
	require.NoError(t, err)
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	for _, f := range []string{"shared/registries.yaml", "shared/components.yaml", "shared/pipeline.yaml", "alpha/releases.yaml"} {
		b, err := os.ReadFile(filepath.Join(examples, f))
		require.NoError(t, err)
		// The agent's chart too comes from the source (the examples name
		// it in their render registry, which this test does not serve).
		b = []byte(strings.ReplaceAll(string(b), "registry.example.com/solar/charts/solar-agent", source.Host+"/solar/charts/solar-agent"))
		require.NoError(t, os.WriteFile(filepath.Join(examples, f), []byte(strings.ReplaceAll(string(b), "ghcr.io", source.Host)), 0o644))
	}
	login := []string{"--registry", site.Host + "/solar", "--ca-file", site.CAFile, "--username", site.Username, "--password-stdin"}
	out := filepath.Join(dir, "out")
	code, _, stderr := cli(append([]string{"render", "--no-credentials", "--out", out, examples}, login...)...)
	require.Equal(t, 0, code, stderr)

	bundle := filepath.Join(dir, "bundle.tar")
	code, _, stderr = cli("export", out, "--out", bundle, examples)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "read only with --with-dependencies")
	code, _, stderr = cli("export", out, "--out", bundle, "--with-dependencies")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--with-dependencies needs the input PATH")

	// The image is not there yet: named, nothing written.
	code, _, stderr = cli("export", out, examples, "--with-dependencies", "--out", bundle)
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "image "+image+": resolving 1.0")
	assert.NoFileExists(t, bundle)

	idx, err := random.Index(256, 1, 2, random.WithSource(rand.NewSource(7)))
	require.NoError(t, err)
	ref, err := name.ParseReference(image)
	require.NoError(t, err)
	transport := ggcrremote.WithTransport(tlsTransport(t, source.CAFile))
	require.NoError(t, ggcrremote.WriteIndex(ref, idx, transport))
	idxDigest, err := idx.Digest()
	require.NoError(t, err)
	sig, err := random.Image(64, 1)
	require.NoError(t, err)
	sigRef, err := name.ParseReference(source.Host + "/solar-test/app:" + archive.CosignTag(digest.Digest(idxDigest.String())))
	require.NoError(t, err)
	require.NoError(t, ggcrremote.Write(sigRef, sig, transport))

	code, stdout, stderr := cli("export", out, examples, "--with-dependencies", "--out", bundle, "-o", "json")
	require.Equal(t, 0, code, stderr)
	var s archive.Summary
	require.NoError(t, json.Unmarshal([]byte(stdout), &s), stdout)
	deps := map[string]archive.Dependency{}
	for _, d := range s.Dependencies {
		deps[d.Reference] = d
	}
	require.Len(t, deps, 5, "four charts and one image, each once: %+v", s.Dependencies)
	assert.Equal(t, podinfo.Digest, deps[source.Host+"/stefanprodan/charts/podinfo:6.7.0"].Digest)
	img := deps[image]
	assert.Equal(t, idxDigest.String(), img.Digest.String())
	assert.Len(t, img.Signatures, 1, "its cosign signature")

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
	got, err := tlsRepository(t, site, mirrored+"stefanprodan/charts/podinfo").Resolve(ctx, "6.7.0")
	require.NoError(t, err)
	assert.Equal(t, podinfo.Digest, got.Digest, "the chart at the site, by the source's digest")
	appRepo := tlsRepository(t, site, mirrored+"solar-test/app")
	got, err = appRepo.Resolve(ctx, "1.0")
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

	code, stdout, stderr = cli(append([]string{"push", bundle}, login...)...)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^KIND +REFERENCE +SITE +ACTION$`, stdout)
	assert.Regexp(t, `(?m)^image +`+strings.ReplaceAll(image, ".", `\.`)+` +`+site.Host+`/mirror/\S+ +unchanged$`, stdout)
	assert.NotContains(t, stdout, "create")

	// The site's podinfo:6.7.0 now holds 6.8.0's chart: the push is
	// refused, naming it, and nothing is written (a dry run lists it so).
	moved, err := oras.Copy(ctx, tlsRepository(t, source, "stefanprodan/charts/podinfo"), "6.8.0",
		tlsRepository(t, site, mirrored+"stefanprodan/charts/podinfo"), "6.7.0", oras.DefaultCopyOptions)
	require.NoError(t, err)
	for _, args := range [][]string{{"push", bundle}, {"push", bundle, "--dry-run"}} {
		code, _, stderr = cli(append(args, login...)...)
		assert.Equal(t, 1, code, stderr)
		assert.Contains(t, stderr, mirrored+"stefanprodan/charts/podinfo:6.7.0 is "+moved.Digest.String())
	}
	got, err = tlsRepository(t, site, mirrored+"stefanprodan/charts/podinfo").Resolve(ctx, "6.7.0")
	require.NoError(t, err)
	assert.Equal(t, moved.Digest, got.Digest, "push moves no tag it relocates")
}
