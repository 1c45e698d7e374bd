// Command solar-testpki makes the secrets of the test services (the registry,
// NATS, the API server) in Go, so that no machine needs openssl or Apache's
// htpasswd, which come from apt and so need root. scripts/install-tools.sh
// builds it as solar-testpki; the start-*.sh scripts run it:
//
//	printf %s "$PASSWORD" | solar-testpki htpasswd USER >DIR/htpasswd
//	solar-testpki cert DIR        # DIR/cert.pem, DIR/key.pem: TLS for 127.0.0.1
//	solar-testpki rsa-key DIR     # DIR/sa.key, DIR/sa.pub: service-account keys
//	solar-testpki token           # 48 hex digits (24 random bytes)
//
// Everything is for tests on 127.0.0.1: the certificate is self-signed and
// lives 2 days.
package main

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/solar-pipeline/solar/internal/testkit/testpki"
)

const usage = `usage: solar-testpki COMMAND [ARGS]

Makes the test services' secrets without openssl or htpasswd.

commands:
  htpasswd [-cost N] USER   reads the password from stdin (one trailing newline
                            is dropped) and prints the htpasswd line
                            USER:BCRYPT-HASH, as htpasswd -Bbn USER PASSWORD
                            does (bcrypt cost 5, htpasswd's default)
  cert DIR                  a self-signed certificate for IP 127.0.0.1
                            (CN 127.0.0.1, ECDSA P-256, valid 2 days, also the
                            CA to trust): DIR/cert.pem and DIR/key.pem (0600)
  rsa-key DIR               an RSA 2048 key pair for service-account tokens:
                            DIR/sa.key (PKCS#8 PEM, 0600) and DIR/sa.pub (PKIX
                            PEM), as kube-apiserver reads them
  token                     24 random bytes as 48 hex digits on stdout

DIR is created when missing; files in it are replaced.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: the exit code is 0 (done, or help asked
// for), 1 (failed) or 2 (bad usage).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd, args := args[0], args[1:]
	if cmd == "-h" || cmd == "--help" || cmd == "help" {
		fmt.Fprint(stdout, usage)
		return 0
	}
	fs := flag.NewFlagSet("solar-testpki "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	var cost int
	wantArgs := 1
	switch cmd {
	case "htpasswd":
		// Apache's htpasswd -B uses cost 5; the registry checks the hash on
		// every request, so the cost is a large part of its CPU (see
		// docs/benchmarks.md), and the tests' figures stay comparable.
		fs.IntVar(&cost, "cost", 5, "bcrypt cost (4 to 31)")
	case "cert", "rsa-key":
	case "token":
		wantArgs = 0
	default:
		fmt.Fprintf(stderr, "solar-testpki: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() != wantArgs {
		fmt.Fprintf(stderr, "solar-testpki %s: want %d argument(s), got %d\n\n%s", cmd, wantArgs, fs.NArg(), usage)
		return 2
	}
	var err error
	switch cmd {
	case "htpasswd":
		err = htpasswd(fs.Arg(0), cost, stdin, stdout)
	case "cert":
		err = cert(fs.Arg(0), time.Now())
	case "rsa-key":
		err = rsaKey(fs.Arg(0))
	case "token":
		err = token(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "solar-testpki %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

// htpasswd prints the htpasswd line of user with the password read from in.
func htpasswd(user string, cost int, in io.Reader, out io.Writer) error {
	if user == "" || strings.ContainsAny(user, ":\n\r") {
		return fmt.Errorf("user %q: must be non-empty, without ':' or line breaks", user)
	}
	b, err := io.ReadAll(in)
	if err != nil {
		return fmt.Errorf("reading the password from stdin: %w", err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	if len(b) == 0 {
		return errors.New("empty password on stdin")
	}
	hash, err := bcrypt.GenerateFromPassword(b, cost)
	if err != nil {
		return fmt.Errorf("hashing the password: %w", err)
	}
	_, err = fmt.Fprintf(out, "%s:%s\n", user, hash)
	return err
}

// cert writes a self-signed certificate for IP 127.0.0.1 and its key into
// dir (testpki.SelfSigned).
func cert(dir string, now time.Time) error {
	der, key, err := testpki.SelfSigned(now)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the key: %w", err)
	}
	if err := writePEM(dir, "key.pem", "PRIVATE KEY", keyDER, 0o600); err != nil {
		return err
	}
	return writePEM(dir, "cert.pem", "CERTIFICATE", der, 0o644)
}

// rsaKey writes the key pair kube-apiserver signs and checks
// service-account tokens with (--service-account-signing-key-file,
// --service-account-key-file), as openssl genrsa 2048 and openssl rsa -pubout
// write them.
func rsaKey(dir string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return fmt.Errorf("generating the key: %w", err)
	}
	priv, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding the key: %w", err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding the public key: %w", err)
	}
	if err := writePEM(dir, "sa.key", "PRIVATE KEY", priv, 0o600); err != nil {
		return err
	}
	return writePEM(dir, "sa.pub", "PUBLIC KEY", pub, 0o644)
}

// token prints 24 random bytes in hex, as openssl rand -hex 24 does.
func token(out io.Writer) error {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return fmt.Errorf("reading random bytes: %w", err)
	}
	_, err := fmt.Fprintln(out, hex.EncodeToString(b))
	return err
}

// writePEM writes one PEM block to dir/name with mode perm. It writes a
// temporary file (created 0600) and renames it, so a key is never readable
// by others, not even for a moment, and a reader never sees half a file.
func writePEM(dir, name, typ string, der []byte, perm os.FileMode) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	defer os.Remove(f.Name()) // after the rename: nothing to remove
	err = pem.Encode(f, &pem.Block{Type: typ, Bytes: der})
	if err == nil {
		err = f.Chmod(perm)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(dir, name), err)
	}
	return nil
}
