package sign

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content/memory"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// repoOf is a client of its own for repository name of reg, as another
// process would have: nothing shared with other clients.
func repoOf(t *testing.T, reg *testenv.Registry, name string) *remote.Repository {
	t.Helper()
	r, err := remote.NewRepository(reg.Host + "/" + name)
	if err != nil {
		t.Fatal(err)
	}
	r.PlainHTTP = true
	r.SkipReferrersGC = true
	r.Client = &auth.Client{Credential: auth.StaticCredential(reg.Host, auth.Credential{Username: reg.Username, Password: reg.Password})}
	return r
}

// needRegistry skips a test that runs a real registry under -short.
func needRegistry(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: this test runs a real registry (the Distribution registry)")
	}
}

// chartSubject is what a signature of chart, pushed as ns/release-app:0.0.1,
// signs.
func chartSubject(chart ocispec.Descriptor) Subject {
	return Subject{Repository: "ns/release-app", Version: "0.0.1", Manifest: chart}
}

// pushChart pushes a small artifact standing in for a chart, tagged 0.0.1.
func pushChart(t *testing.T, r *remote.Repository) ocispec.Descriptor {
	t.Helper()
	ctx := context.Background()
	mem := memory.New()
	layer, err := oras.PushBytes(ctx, mem, "application/vnd.cncf.helm.chart.content.v1.tar+gzip", []byte("a chart"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := oras.PackManifest(ctx, mem, oras.PackManifestVersion1_1, "application/vnd.cncf.helm.config.v1+json",
		oras.PackManifestOptions{Layers: []ocispec.Descriptor{layer}, ManifestAnnotations: map[string]string{ocispec.AnnotationCreated: "1970-01-01T00:00:00Z"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Tag(ctx, m, "0.0.1"); err != nil {
		t.Fatal(err)
	}
	if _, err := oras.Copy(ctx, mem, "0.0.1", r, "0.0.1", oras.DefaultCopyOptions); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestConcurrentSigners: six writers, each a client of its own with a key
// of its own, sign one chart at once on the Distribution registry, which
// has no referrers API: every signature is among the chart's referrers.
// Signing again writes nothing.
func TestConcurrentSigners(t *testing.T) {
	needRegistry(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	chart := pushChart(t, repoOf(t, reg, "ns/release-app"))
	const writers = 6
	keys := make([]*Key, writers)
	want := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range writers {
		keys[i] = newKey(t)
		wg.Go(func() {
			_, w, err := Attach(context.Background(), repoOf(t, reg, "ns/release-app"), chartSubject(chart), keys[i])
			if err == nil && w == nil {
				err = errors.New("nothing written")
			}
			if err == nil {
				err = Confirm(context.Background(), []*Written{w})
			}
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
				return
			}
			mu.Lock()
			want[w.Desc.Digest.String()] = true
			mu.Unlock()
		})
	}
	wg.Wait()
	refs, err := registry.Referrers(context.Background(), repoOf(t, reg, "ns/release-app"), chart, api.MediaTypeSigstoreBundle)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		delete(want, r.Digest.String())
	}
	if len(want) != 0 || len(refs) != writers {
		t.Fatalf("%d signatures of %d are among the referrers (%d there)", writers-len(want), writers, len(refs))
	}
	for i, k := range keys {
		if _, w, err := Attach(context.Background(), repoOf(t, reg, "ns/release-app"), chartSubject(chart), k); err != nil || w != nil {
			t.Fatalf("signing again with key %d: written %v, %v", i, w != nil, err)
		}
	}
}

// TestCosignVerifies: the cosign CLI (scripts/install-tools.sh builds it)
// verifies a signature Attach wrote, offline, with the public key; with
// another key it refuses; with -a it checks the repository and version the
// signature names.
func TestCosignVerifies(t *testing.T) {
	needRegistry(t)
	cosign := testenv.Tool(t, "cosign")
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	r := repoOf(t, reg, "ns/release-app")
	chart := pushChart(t, r)
	k := newKey(t)
	if _, _, err := Attach(context.Background(), r, chartSubject(chart), k); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pub, other := filepath.Join(dir, "solar.pub"), filepath.Join(dir, "other.pub")
	if err := os.WriteFile(pub, k.PublicPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, newKey(t).PublicPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := reg.Host + "/ns/release-app@" + chart.Digest.String()
	verify := func(key string, annotations ...string) (string, error) {
		args := []string{"verify", "--key", key, "--insecure-ignore-tlog", "--allow-http-registry", "--output", "text"}
		for _, a := range annotations {
			args = append(args, "-a", a)
		}
		cmd := exec.Command(cosign, append(args, ref)...)
		cmd.Env = append(os.Environ(), "DOCKER_CONFIG="+dir, "COSIGN_REPOSITORY=", "HOME="+dir)
		login := exec.Command(cosign, "login", reg.Host, "-u", reg.Username, "-p", reg.Password)
		login.Env = cmd.Env
		if out, err := login.CombinedOutput(); err != nil {
			t.Fatalf("cosign login: %v\n%s", err, out)
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := verify(pub)
	if err != nil {
		t.Fatalf("cosign verify refused Solar's signature: %v\n%s", err, out)
	}
	t.Logf("cosign verify --key solar.pub:\n%s", out)
	if out, err := verify(other); err == nil || !strings.Contains(out, "no matching attestations") {
		t.Fatalf("cosign verify with another key: %v\n%s", err, out)
	} else {
		t.Logf("cosign verify --key other.pub: %v\n%s", err, out)
	}
	// cosign verify -a checks the repository and version the signature
	// names (the statement's subject annotations), as Solar does.
	repo, version := api.AnnotationSignedRepository+"=ns/release-app", api.AnnotationSignedVersion+"=0.0.1"
	if out, err := verify(pub, repo, version); err != nil {
		t.Fatalf("cosign verify -a with the repository and version signed: %v\n%s", err, out)
	}
	for _, a := range []string{api.AnnotationSignedVersion + "=0.0.2", api.AnnotationSignedRepository + "=ns/other-app"} {
		if out, err := verify(pub, a); err == nil || !strings.Contains(out, "missing or incorrect annotation") {
			t.Fatalf("cosign verify -a %s: %v\n%s", a, err, out)
		}
	}
}

// TestCheckAndCarry: Check finds a chart's signature good with its key,
// bad with another, missing on an unsigned chart; Carry copies it into
// another registry, where it checks the same, and copies nothing twice.
func TestCheckAndCarry(t *testing.T) {
	needRegistry(t)
	ctx := context.Background()
	src, dst := testenv.StartRegistry(t, testenv.RegistryOptions{}), testenv.StartRegistry(t, testenv.RegistryOptions{})
	from, to := repoOf(t, src, "ns/release-app"), repoOf(t, dst, "ns/release-app")
	chart := pushChart(t, from)
	k := newKey(t)
	v, err := NewVerifier(k.PublicPEM())
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Check(ctx, from, chartSubject(chart)); !errors.Is(err, ErrUnsigned) {
		t.Fatalf("an unsigned chart: %v", err)
	}
	_, w, err := Attach(ctx, from, chartSubject(chart), k)
	if err != nil || Confirm(ctx, []*Written{w}) != nil {
		t.Fatal(err)
	}
	if err := v.Check(ctx, from, chartSubject(chart)); err != nil {
		t.Fatalf("the signed chart: %v", err)
	}
	other, err := NewVerifier(newKey(t).PublicPEM())
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Check(ctx, from, chartSubject(chart)); !errors.Is(err, ErrBadSignature) {
		t.Fatalf("with another key: %v", err)
	}
	if _, err := oras.Copy(ctx, from, "0.0.1", to, "0.0.1", oras.DefaultCopyOptions); err != nil {
		t.Fatal(err)
	}
	ws, err := Carry(ctx, from, to, chartSubject(chart), v)
	if err != nil || len(ws) != 1 || Confirm(ctx, ws) != nil {
		t.Fatalf("carried %d: %v", len(ws), err)
	}
	if err := v.Check(ctx, to, chartSubject(chart)); err != nil {
		t.Fatalf("the carried signature: %v", err)
	}
	if ws, err := Carry(ctx, from, to, chartSubject(chart), v); err != nil || len(ws) != 0 {
		t.Fatalf("carrying again wrote %d: %v", len(ws), err)
	}
	if _, err := NewVerifier([]byte("-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n")); err == nil {
		t.Fatal("a private key was taken as a verification key")
	}
}
