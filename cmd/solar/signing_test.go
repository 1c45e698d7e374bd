package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/solar-pipeline/solar/renderer/store"
)

// writeKey writes a new Ed25519 signing key (PKCS #8 PEM, 0600) and its
// public key into dir as NAME.key and NAME.pub, and returns both paths.
func writeKey(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	require.NoError(t, err)
	k, err := sign.NewKey(priv)
	require.NoError(t, err)
	key, pub := filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	require.NoError(t, os.WriteFile(key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(pub, k.PublicPEM(), 0o644))
	return key, pub
}

// TestPublishSigned: publish --signing-key signs every chart, and the
// cosign CLI verifies each on the registry; a second publish writes
// nothing; verify --key passes with the key and names every chart with
// another; a new key from $SOLAR_SIGNING_KEY adds its signatures to the
// unchanged charts (a rotation) and writes only those; the key is never
// printed.
func TestPublishSigned(t *testing.T) {
	needRegistry(t)
	cosign := testenv.Tool(t, "cosign")
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	registry := proxy.Host + "/solar"
	dir := t.TempDir()
	key, pub := writeKey(t, dir, "solar")
	newKey, newPub := writeKey(t, dir, "new")
	secret, err := os.ReadFile(key)
	require.NoError(t, err)
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args = append(args, "--username", reg.Username, "--password-stdin", "--plain-http", "--registry", registry)
		code := run(context.Background(), args, strings.NewReader(reg.Password+"\n"), &stdout, &stderr)
		for _, out := range []string{stdout.String(), stderr.String()} {
			assert.NotContains(t, out, string(secret[40:80]), "the signing key is never printed")
		}
		return code, stdout.String(), stderr.String()
	}

	code, _, stderr := cli("publish", "--no-credentials", "--signing-key", key, "../../examples")
	require.Equal(t, 0, code, stderr)
	proxy.Take()
	remote, err := store.NewRemote(store.RemoteOptions{Host: reg.Host, Prefix: "solar", Username: reg.Username, Password: reg.Password, PlainHTTP: true})
	require.NoError(t, err)
	repos, err := remote.Repositories(context.Background(), "")
	require.NoError(t, err)
	require.Len(t, repos, 12, "10 charts, 2 namespace indexes")
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+home, "COSIGN_REPOSITORY=")
	login := exec.Command(cosign, "login", reg.Host, "-u", reg.Username, "-p", reg.Password)
	login.Env = env
	out, err := login.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, repo := range repos {
		if publish.IsIndexRepository(repo) {
			continue
		}
		verify := exec.Command(cosign, "verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", reg.Host+"/solar/"+repo+":0.0.1")
		verify.Env = env
		out, err := verify.CombinedOutput()
		assert.NoError(t, err, "cosign verify %s:\n%s", repo, out)
	}

	code, _, stderr = cli("publish", "--no-credentials", "--signing-key", key, "../../examples")
	require.Equal(t, 0, code, stderr)
	reqs := proxy.Take()
	assert.Zero(t, countproxy.Writes(reqs), "a no-op publish with a key writes nothing: %v", reqs)
	probes := 0
	for _, r := range reqs {
		if strings.Contains(r, "/referrers/") {
			probes++
		}
	}
	assert.Zero(t, probes, "the signed namespace indexes name each chart's signature: no referrer is asked for: %v", reqs)
	t.Logf("no-op signed publish: %d requests for %d charts", len(reqs), len(repos))

	code, _, stderr = cli("verify", "--key", pub)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "checked the signatures of 10 versions")
	code, stdout, _ := cli("verify", "--key", newPub)
	assert.Equal(t, 1, code)
	assert.Equal(t, 10, strings.Count(stdout, "the signature does not verify with "+newPub), stdout)

	newSecret, err := os.ReadFile(newKey)
	require.NoError(t, err)
	t.Setenv(signingKeyEnv, string(newSecret))
	code, _, stderr = cli("publish", "--no-credentials", "--exit-code", "../../examples")
	require.Equal(t, 2, code, "new signatures are a change: %s", stderr)
	reqs = proxy.Take()
	for _, r := range reqs {
		if countproxy.Writes([]string{r}) > 0 && !strings.Contains(r, "/solar-index/") { // an index's versions are its writes
			assert.NotContains(t, r, "/manifests/0.0.", "only signatures are written: %s", r)
		}
	}
	code, _, stderr = cli("verify", "--key", newPub)
	assert.Equal(t, 0, code, stderr)
	code, _, stderr = cli("verify", "--key", pub)
	assert.Equal(t, 0, code, "the old signatures stay: %s", stderr)
}

// TestPushArchiveSignsOnlyWithKey: push of an archive with a signing key
// (here from $SOLAR_SIGNING_KEY) and no --key is refused before anything is
// read: push would sign what nobody verified.
func TestPushArchiveSignsOnlyWithKey(t *testing.T) {
	dir := t.TempDir()
	key, _ := writeKey(t, dir, "site")
	secret, err := os.ReadFile(key)
	require.NoError(t, err)
	t.Setenv(signingKeyEnv, string(secret))
	bundle := filepath.Join(dir, "bundle.tar")
	require.NoError(t, os.WriteFile(bundle, []byte("not even read"), 0o600))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"push", bundle, "--registry", "127.0.0.1:1/solar"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr.String(), "needs --key")
}
