package capool

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/solar-pipeline/solar/internal/testkit/testpki"
)

// TestWithFile: the file's certificate is trusted beside the system's; a
// file without one, or no file, is an error.
func TestWithFile(t *testing.T) {
	der, _, err := testpki.SelfSigned(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	pool, err := WithFile(ca)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool}); err != nil {
		t.Fatalf("the file's certificate is not trusted: %v", err)
	}
	empty := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(empty, []byte("no certificate here"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{empty, filepath.Join(dir, "missing.pem")} {
		if _, err := WithFile(f); err == nil {
			t.Errorf("%s: no error", f)
		}
	}
}
