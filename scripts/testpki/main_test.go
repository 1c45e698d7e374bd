package main

import (
	"bytes"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"
)

func runCmd(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestHtpasswd(t *testing.T) {
	for _, in := range []string{"s3cret", "s3cret\n", "s3cret\r\n"} {
		code, out, stderr := runCmd(t, in, "htpasswd", "solar")
		require.Equal(t, 0, code, stderr)
		user, hash, ok := strings.Cut(strings.TrimSuffix(out, "\n"), ":")
		require.True(t, ok, out)
		assert.Equal(t, "solar", user)
		require.NoError(t, bcrypt.CompareHashAndPassword([]byte(hash), []byte("s3cret")))
		cost, err := bcrypt.Cost([]byte(hash))
		require.NoError(t, err)
		assert.Equal(t, 5, cost, "htpasswd -B's default")
	}
	code, out, _ := runCmd(t, "pw", "htpasswd", "-cost", "6", "u")
	require.Equal(t, 0, code)
	cost, err := bcrypt.Cost([]byte(strings.TrimSpace(strings.SplitN(out, ":", 2)[1])))
	require.NoError(t, err)
	assert.Equal(t, 6, cost)

	for name, c := range map[string]struct {
		stdin string
		args  []string
		code  int
	}{
		"empty password": {"\n", []string{"htpasswd", "u"}, 1},
		"colon in user":  {"pw", []string{"htpasswd", "a:b"}, 1},
		"no user":        {"pw", []string{"htpasswd"}, 2},
		"two users":      {"pw", []string{"htpasswd", "a", "b"}, 2},
	} {
		code, _, stderr := runCmd(t, c.stdin, c.args...)
		assert.Equal(t, c.code, code, name)
		assert.NotEmpty(t, stderr, name)
	}
}

func TestCertServesTLSFor127001(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	code, _, stderr := runCmd(t, "", "cert", dir)
	require.Equal(t, 0, code, stderr)
	st, err := os.Stat(filepath.Join(dir, "key.pem"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file left")

	pair, err := tls.LoadX509KeyPair(filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	require.NoError(t, err)
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", leaf.Subject.CommonName)
	assert.WithinDuration(t, time.Now().Add(48*time.Hour), leaf.NotAfter, time.Minute)

	// A client trusting cert.pem reaches a server using it on 127.0.0.1.
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}}
	srv.StartTLS()
	defer srv.Close()
	pemBytes, err := os.ReadFile(filepath.Join(dir, "cert.pem"))
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pemBytes))
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	resp, err := client.Get("https://127.0.0.1:" + port)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	// ... and not under another name.
	_, err = client.Get("https://localhost:" + port)
	require.Error(t, err)
}

func TestRSAKey(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runCmd(t, "", "rsa-key", dir)
	require.Equal(t, 0, code, stderr)
	st, err := os.Stat(filepath.Join(dir, "sa.key"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	b, err := os.ReadFile(filepath.Join(dir, "sa.key"))
	require.NoError(t, err)
	block, _ := pem.Decode(b)
	require.NotNil(t, block)
	assert.Equal(t, "PRIVATE KEY", block.Type)
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	priv := k.(*rsa.PrivateKey)
	assert.Equal(t, 2048, priv.N.BitLen())

	b, err = os.ReadFile(filepath.Join(dir, "sa.pub"))
	require.NoError(t, err)
	block, _ = pem.Decode(b)
	require.NotNil(t, block)
	assert.Equal(t, "PUBLIC KEY", block.Type)
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	require.NoError(t, err)
	assert.True(t, priv.PublicKey.Equal(pub))
}

func TestToken(t *testing.T) {
	code, a, _ := runCmd(t, "", "token")
	require.Equal(t, 0, code)
	_, b, _ := runCmd(t, "", "token")
	a, b = strings.TrimSuffix(a, "\n"), strings.TrimSuffix(b, "\n")
	raw, err := hex.DecodeString(a)
	require.NoError(t, err)
	assert.Len(t, raw, 24)
	assert.NotEqual(t, a, b)
	code, _, _ = runCmd(t, "", "token", "extra")
	assert.Equal(t, 2, code)
}

func TestUsage(t *testing.T) {
	code, _, stderr := runCmd(t, "")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "usage: solar-testpki")
	code, stdout, _ := runCmd(t, "", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "rsa-key DIR")
	code, _, stderr = runCmd(t, "", "cert", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "cert DIR")
	code, _, stderr = runCmd(t, "", "openssl")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown command "openssl"`)
}
