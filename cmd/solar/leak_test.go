package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestNoSecretLeaks runs every command that reads secrets, in every output
// mode, with a real registry password and the real agent tokens of a real API
// server, and scans stdout, stderr and every file written outside the layout
// (the cache) for each secret: as it is, base64 (standard and URL) and
// JSON-escaped. The layout holds the agent charts, whose kubeconfig carries
// the token by design; bootstrap-manifests prints the pull secret by design
// (it is applied to the cluster): neither is scanned.
func TestNoSecretLeaks(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real API server and registry")
	}
	api := testenv.StartAPIServer(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	ctx := context.Background()
	api.CreateNamespaces(t, "alpha", "beta")
	out, cache := filepath.Join(t.TempDir(), "out"), t.TempDir()
	registry := reg.Host + "/solar"
	// A process, not run(): whatever it writes anywhere is scanned.
	bin := testenv.SolarBinary(t)
	cli := func(stdin string, args ...string) (int, string) {
		if args[0] != "verify" { // the commands that read objects
			args = append(args, "--cache-dir", cache)
		}
		cmd := exec.Command(bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		output, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode(), string(output)
		}
		require.NoError(t, err)
		return 0, string(output)
	}
	code, output := cli("", "credentials", "sync", "--kubeconfig", api.Kubeconfig, "../../examples")
	require.Equal(t, 0, code, output)

	// The registry's password and the admin's bearer token of the kubeconfig;
	// basic auth's user:password too (base64 is the Authorization header).
	secrets := []string{reg.Password, reg.Username + ":" + reg.Password, api.Config.BearerToken}
	list, err := api.Client.CoreV1().Secrets("alpha").List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, s := range list.Items {
		if tok := string(s.Data["token"]); tok != "" {
			secrets = append(secrets, tok)
		}
	}
	require.GreaterOrEqual(t, len(secrets), 5, "the password (alone and with the user), the admin's token and the tokens of edge-1 and edge-2")

	pw := reg.Password + "\n"
	reviewed := filepath.Join(t.TempDir(), "reviewed.json")
	login := []string{"--plain-http", "--username", reg.Username, "--password-stdin"}
	runs := [][]string{
		{"vet", "-v", "../../examples"},
		{"vet", "-o", "json", "../../examples"},
		{"credentials", "sync", "-v", "--kubeconfig", api.Kubeconfig, "../../examples"},
		{"credentials", "sync", "-o", "json", "--kubeconfig", api.Kubeconfig, "../../examples"},
		{"credentials", "sync", "-o", "yaml", "--dry-run", "--kubeconfig", api.Kubeconfig, "../../examples"},
		{"render", "-v", "--kubeconfig", api.Kubeconfig, "--out", out, "../../examples"},
		{"render", "-o", "json", "--kubeconfig", api.Kubeconfig, "--out", out, "../../examples"},
		{"render", "-o", "yaml", "--dry-run", "--kubeconfig", api.Kubeconfig, "--out", out, "../../examples"},
		{"diff", "--kubeconfig", api.Kubeconfig, "--out", out, "../../examples"},
		append([]string{"publish", "-v", "--kubeconfig", api.Kubeconfig, "--registry", registry, "../../examples"}, login...),
		append([]string{"publish", "-o", "json", "--kubeconfig", api.Kubeconfig, "--registry", registry, "../../examples"}, login...),
		append([]string{"publish", "-o", "yaml", "--dry-run", "--kubeconfig", api.Kubeconfig, "--registry", registry, "../../examples"}, login...),
		append([]string{"diff", "--kubeconfig", api.Kubeconfig, "--registry", registry, "../../examples"}, login...),
		append([]string{"diff", "-o", "json", "--kubeconfig", api.Kubeconfig, "--registry", registry, "--write-reviewed", reviewed, "../../examples"}, login...),
		append([]string{"verify", "-v", "--registry", registry}, login...),
		// --debug: every request, with its credentials, logged.
		{"credentials", "sync", "--debug", "--kubeconfig", api.Kubeconfig, "../../examples"},
		append([]string{"publish", "--debug", "--kubeconfig", api.Kubeconfig, "--registry", registry, "../../examples"}, login...),
		// Errors: a registry nobody listens on, a wrong password.
		append([]string{"publish", "--debug", "--kubeconfig", api.Kubeconfig, "--registry", "127.0.0.1:1/solar", "../../examples"}, login...),
		{"publish", "--debug", "--kubeconfig", api.Kubeconfig, "--registry", registry, "--plain-http", "--username", "nobody", "--password-stdin", "../../examples"},
	}
	for i, args := range runs {
		code, output := cli(pw, args...)
		want := 0
		if i >= len(runs)-2 {
			want = 1 // the errors
		}
		assert.Equal(t, want, code, "solar %s", strings.Join(args, " "))
		t.Logf("solar %s: exit %d, %d bytes of output", strings.Join(args, " "), code, len(output))
		assertNoSecret(t, "solar "+strings.Join(args, " "), output, secrets)
	}
	assertNoSecret(t, "the reviewed list", string(must(os.ReadFile(reviewed))), secrets)
	require.NoError(t, filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		assertNoSecret(t, p, string(b), secrets)
		return nil
	}))
}

// assertNoSecret fails if text holds a secret as it is, base64-encoded or
// JSON-escaped, without printing it.
func assertNoSecret(t *testing.T, where, text string, secrets []string) {
	t.Helper()
	for i, s := range secrets {
		quoted, _ := json.Marshal(s)
		forms := []string{"as it is", "base64", "base64 (URL)", "base64 (raw)", "JSON-escaped"}
		for k, form := range []string{s, base64.StdEncoding.EncodeToString([]byte(s)), base64.URLEncoding.EncodeToString([]byte(s)),
			base64.RawStdEncoding.EncodeToString([]byte(s)), string(quoted[1 : len(quoted)-1])} {
			// Not assert.NotContains: it would print the secret.
			if strings.Contains(text, form) {
				t.Errorf("%s: secret %d leaks, %s", where, i, forms[k])
			}
		}
	}
}
