package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestRegistryLogin: solar registry login checks the password against a
// real registry with auth and writes the login into $DOCKER_CONFIG/
// config.json, mode 0600, never echoing the password; then solar publish
// without --username, oras and helm (whose own registry config is empty)
// all use it; a wrong password is refused and writes nothing; logout
// removes it, and the same publish is denied.
func TestRegistryLogin(t *testing.T) {
	needRegistry(t)
	helm, oras := testenv.Tool(t, "helm"), testenv.Tool(t, "oras")
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	home := t.TempDir()
	config := filepath.Join(home, "docker")
	t.Setenv("DOCKER_CONFIG", config)
	t.Setenv("HOME", home)
	env := append(os.Environ(), "HELM_REGISTRY_CONFIG="+filepath.Join(home, "helm", "registry.json"),
		"HELM_CACHE_HOME="+filepath.Join(home, "cache"), "HELM_CONFIG_HOME="+filepath.Join(home, "helm"))
	cli := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
		for _, out := range []string{stdout.String(), stderr.String()} {
			assert.NotContains(t, out, reg.Password, "the password is never printed")
			assert.NotContains(t, out, "not-the-password", "a wrong password is never printed")
		}
		return code, stdout.String(), stderr.String()
	}
	tool := func(name string, args ...string) ([]byte, error) {
		cmd := exec.Command(name, args...)
		cmd.Env, cmd.Dir = env, home
		return cmd.CombinedOutput()
	}
	publish := []string{"publish", "--plain-http", "--no-credentials", "--registry", reg.Host + "/solar", "-n", "beta", "../../examples"}

	code, _, stderr := cli("not-the-password\n", "registry", "login", reg.Host, "-u", reg.Username, "--password-stdin", "--plain-http")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "logging in to "+reg.Host+": ")
	assert.NoFileExists(t, filepath.Join(config, "config.json"), "a refused login writes nothing")
	code, _, stderr = cli("", "registry", "login", reg.Host, "-u", reg.Username)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "registry login needs --username and --password-stdin")

	code, stdout, stderr := cli(reg.Password+"\n", "registry", "login", reg.Host+"/solar", "-u", reg.Username, "--password-stdin", "--plain-http")
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "logged in to "+reg.Host+" as "+reg.Username+" ("+filepath.Join(config, "config.json")+")")
	info, err := os.Stat(filepath.Join(config, "config.json"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	var file struct {
		Auths map[string]struct{ Auth string } `json:"auths"`
	}
	raw, err := os.ReadFile(filepath.Join(config, "config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(raw, &file))
	assert.Contains(t, file.Auths, reg.Host, "the host's login, whatever the prefix: %s", raw)

	code, stdout, stderr = cli(reg.Password, "registry", "login", reg.Host, "-u", reg.Username, "--password-stdin", "--plain-http", "-o", "json")
	require.Equal(t, 0, code, stderr)
	assert.JSONEq(t, `{"host":"`+reg.Host+`","config":"`+filepath.Join(config, "config.json")+`","loggedIn":true}`, stdout)

	code, _, stderr = cli("", publish...)
	require.Equal(t, 0, code, "publish reads the login: %s", stderr)
	out, err := tool(oras, "repo", "tags", "--plain-http", reg.Host+"/solar/beta/bootstrap-plant-1")
	assert.NoError(t, err, "oras reads the login: %s", out)
	assert.Equal(t, "0.0.1\n", string(out))
	out, err = tool(helm, "pull", "oci://"+reg.Host+"/solar/beta/bootstrap-plant-1", "--version", "0.0.1", "--plain-http")
	assert.NoError(t, err, "helm reads the login: %s", out)
	assert.FileExists(t, filepath.Join(home, "bootstrap-plant-1-0.0.1.tgz"))

	code, stdout, stderr = cli("", "registry", "logout", reg.Host)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "logged out of "+reg.Host)
	raw, err = os.ReadFile(filepath.Join(config, "config.json"))
	require.NoError(t, err)
	assert.NotContains(t, string(raw), reg.Host)
	code, _, stderr = cli("", "registry", "logout", reg.Host)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "not logged in to "+reg.Host)
	code, _, stderr = cli("", append(publish, "--dry-run")...)
	assert.Equal(t, 1, code, "logged out, publish is denied: %s", stderr)
	assert.Contains(t, stderr, "no credentials for it: none given and none in the docker config or helm's registry config (solar registry login HOST -u USER --password-stdin writes one)")
	out, err = tool(helm, "pull", "oci://"+reg.Host+"/solar/beta/bootstrap-plant-1", "--version", "0.0.1", "--plain-http")
	assert.Error(t, err, "logged out, helm is denied: %s", out)
}

// TestHelmRegistryLoginIsRead: a login helm registry login wrote (helm's
// own registry config, not the docker config) serves solar publish too,
// as helm reads the docker config after its own.
func TestHelmRegistryLoginIsRead(t *testing.T) {
	needRegistry(t)
	helm := testenv.Tool(t, "helm")
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DOCKER_CONFIG", filepath.Join(home, "docker"))
	t.Setenv("HELM_CONFIG_HOME", filepath.Join(home, "helm"))
	t.Setenv("HELM_REGISTRY_CONFIG", "")
	require.NoError(t, os.Unsetenv("HELM_REGISTRY_CONFIG"))
	publish := []string{"publish", "--plain-http", "--no-credentials", "--registry", reg.Host + "/solar", "-n", "beta", "../../examples"}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append(publish, "--dry-run"), strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 1, code, "no login yet: %s", stderr.String())

	login := exec.Command(helm, "registry", "login", reg.Host, "-u", reg.Username, "--password-stdin", "--plain-http")
	login.Stdin = strings.NewReader(reg.Password)
	out, err := login.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.FileExists(t, filepath.Join(home, "helm", "registry", "config.json"), "helm's own file, where it writes")
	require.NoFileExists(t, filepath.Join(home, "docker", "config.json"))
	stderr.Reset()
	code = run(context.Background(), publish, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, 0, code, "publish reads helm's login: %s", stderr.String())

	// solar registry logout forgets every login solar reads, helm's too.
	stderr.Reset()
	code = run(context.Background(), []string{"registry", "logout", reg.Host}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 0, code, "%s", stderr.String())
	assert.Contains(t, stderr.String(), filepath.Join(home, "helm", "registry", "config.json"))
	stderr.Reset()
	code = run(context.Background(), append(publish, "--dry-run"), strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, 1, code, "logged out: %s", stderr.String())
}
