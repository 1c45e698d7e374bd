package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/countproxy"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestPublishSignedCosignKey: the key pair cosign generate-key-pair makes
// (encrypted ECDSA P-256) signs with its password in $COSIGN_PASSWORD; the
// cosign CLI verifies the charts with cosign.pub on the registry; a no-op
// publish writes nothing (ECDSA signed as RFC 6979 says, the same at every
// run); without the password, or with a wrong one, publish says which file
// and which variable, and never the password; verify with another key says
// plainly that the signature does not verify with it.
func TestPublishSignedCosignKey(t *testing.T) {
	needRegistry(t)
	cosign := testenv.Tool(t, "cosign")
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	proxy := testenv.StartProxy(t, reg.Host)
	dir := t.TempDir()
	const password = "correct horse battery"
	gen := exec.Command(cosign, "generate-key-pair")
	gen.Dir, gen.Env = dir, append(os.Environ(), "COSIGN_PASSWORD="+password)
	out, err := gen.CombinedOutput()
	require.NoError(t, err, "%s", out)
	key, pub := filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
	_, otherPub := writeKey(t, dir, "other")
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args = append(args, "--username", reg.Username, "--password-stdin", "--plain-http", "--registry", proxy.Host+"/solar")
		code := run(context.Background(), args, strings.NewReader(reg.Password+"\n"), &stdout, &stderr)
		for _, o := range []string{stdout.String(), stderr.String()} {
			assert.NotContains(t, o, password, "the key's password is never printed")
			assert.NotContains(t, o, "wrong horse", "a wrong password is never printed")
		}
		return code, stdout.String(), stderr.String()
	}
	publish := []string{"publish", "--no-credentials", "--signing-key", key, "../../examples"}

	t.Setenv(keyPasswordEnv, "") // restored after the test
	require.NoError(t, os.Unsetenv(keyPasswordEnv))
	code, _, stderr := cli(publish...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--signing-key "+key+": the key is encrypted: set $COSIGN_PASSWORD to its password")
	t.Setenv(keyPasswordEnv, "wrong horse")
	code, _, stderr = cli(publish...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "--signing-key "+key+": $COSIGN_PASSWORD does not decrypt the key")
	assert.Zero(t, countproxy.Writes(proxy.Take()), "a key refused writes nothing")

	t.Setenv(keyPasswordEnv, password)
	code, _, stderr = cli(publish...)
	require.Equal(t, 0, code, stderr)
	proxy.Take()
	home := t.TempDir()
	env := append(os.Environ(), "HOME="+home, "DOCKER_CONFIG="+home, "COSIGN_REPOSITORY=")
	login := exec.Command(cosign, "login", reg.Host, "-u", reg.Username, "-p", reg.Password)
	login.Env = env
	out, err = login.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, repo := range []string{"alpha/bootstrap-edge-1", "beta/bootstrap-plant-1"} {
		verify := exec.Command(cosign, "verify", "--key", pub, "--insecure-ignore-tlog", "--allow-http-registry", reg.Host+"/solar/"+repo+":0.0.1")
		verify.Env = env
		out, err := verify.CombinedOutput()
		assert.NoError(t, err, "cosign verify %s:\n%s", repo, out)
	}

	code, stdout, stderr := cli(append(publish, "--exit-code")...)
	require.Equal(t, 0, code, "a no-op publish signed with ECDSA changes nothing: %s%s", stdout, stderr)
	reqs := proxy.Take()
	assert.Zero(t, countproxy.Writes(reqs), "a no-op publish with an ECDSA key writes nothing: %v", reqs)

	code, _, stderr = cli("verify", "--key", pub)
	assert.Equal(t, 0, code, stderr)
	code, stdout, _ = cli("verify", "--key", otherPub)
	assert.Equal(t, 1, code)
	assert.Equal(t, 10, strings.Count(stdout, ": the signature does not verify with "+otherPub+"\n"), stdout)
	assert.NotContains(t, stdout, "threshold")
}
