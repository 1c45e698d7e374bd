package sign

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

func x509MarshalPKCS8(k any) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func newECKey(t *testing.T) *Key {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	k, err := NewKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// kinds is a new key of each kind Solar signs with.
func kinds(t *testing.T) map[string]*Key {
	return map[string]*Key{"ed25519": newKey(t), "ecdsa-p256": newECKey(t)}
}

func mustPEM(t *testing.T, k any) string {
	t.Helper()
	b, err := x509MarshalPKCS8(k)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func password(p string) Password { return func() ([]byte, bool) { return []byte(p), true } }

// TestParseKey: the keys users have (openssl's Ed25519 and ECDSA P-256,
// PKCS #8 or SEC 1, and cosign generate-key-pair's encrypted ECDSA P-256
// with its password) parse to the key they hold; other keys, an encrypted
// key without its password or with a wrong one, are refused and say why.
func TestParseKey(t *testing.T) {
	ed := newKey(t)
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ecKey, _ := NewKey(ec)
	sec1, err := x509.MarshalECPrivateKey(ec)
	if err != nil {
		t.Fatal(err)
	}
	// cosign generate-key-pair encrypts with this very function.
	cosignPEM, _, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), func(bool) ([]byte, error) { return []byte("s3cret"), nil })
	if err != nil {
		t.Fatal(err)
	}
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	for _, tc := range []struct {
		name, pem string
		pass      Password
		pub       []byte // the key parsed, or nil
		err       string
		is        error
	}{
		{name: "ed25519 pkcs8", pem: mustPEM(t, ed.priv), pub: ed.PublicPEM()},
		{name: "ecdsa p256 pkcs8", pem: mustPEM(t, ec), pub: ecKey.PublicPEM()},
		{name: "ecdsa p256 sec1", pem: string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1})), pub: ecKey.PublicPEM()},
		{name: "cosign encrypted", pem: string(cosignPEM), pass: password("s3cret")},
		{name: "cosign without password", pem: string(cosignPEM), is: ErrNoPassword},
		{name: "cosign wrong password", pem: string(cosignPEM), pass: password("wrong"), is: ErrWrongPassword},
		{name: "cosign empty password", pem: string(cosignPEM), pass: password(""), is: ErrWrongPassword},
		{name: "not PEM", pem: "hello", err: "no PEM private key found"},
		{name: "public key", pem: string(ed.PublicPEM()), err: `a PEM "PUBLIC KEY" where a private key belongs`},
		{name: "p384", pem: mustPEM(t, p384), err: "an ECDSA key on P-384: Solar signs with Ed25519 or ECDSA P-256"},
		{name: "rsa", pem: mustPEM(t, rsaKey), err: "the signing key is an RSA key: Solar signs with Ed25519 or ECDSA P-256"},
		{name: "garbage DER", pem: "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n", err: "the signing key:"},
	} {
		k, err := ParseKey([]byte(tc.pem), tc.pass)
		switch {
		case tc.is != nil || tc.err != "":
			if err == nil {
				t.Errorf("%s: parsed", tc.name)
			} else if tc.is != nil && !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v", tc.name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.pub != nil && !bytes.Equal(k.PublicPEM(), tc.pub):
			t.Errorf("%s: another key parsed", tc.name)
		}
	}
}

// TestVerifyOtherKey: a signature made with another key says so plainly,
// naming the keys tried (their files, else their fingerprints), not
// sigstore's "accepted signatures do not match threshold"; it is an
// ErrBadSignature all the same.
func TestVerifyOtherKey(t *testing.T) {
	signer, a, b := newECKey(t), newKey(t), newECKey(t)
	s := edge1(digest.FromString("chart"))
	bun, err := signer.SubjectBundle(s)
	if err != nil {
		t.Fatal(err)
	}
	named, err := NewNamedVerifier([]string{"a.pub", "b.pub"}, a.PublicPEM(), b.PublicPEM())
	if err != nil {
		t.Fatal(err)
	}
	err = named.VerifySubject(bun, s)
	if !errors.Is(err, ErrBadSignature) || err.Error() != "the signature does not verify with a.pub or b.pub" {
		t.Fatalf("%v", err)
	}
	unnamed, err := NewVerifier(a.PublicPEM())
	if err != nil {
		t.Fatal(err)
	}
	err = unnamed.VerifySubject(bun, s)
	if err == nil || !strings.HasPrefix(err.Error(), "the signature does not verify with the key sha256:") || strings.Contains(err.Error(), "threshold") {
		t.Fatalf("%v", err)
	}
	// The right key, another manifest: not a question of keys.
	right, _ := NewNamedVerifier([]string{"signer.pub"}, signer.PublicPEM())
	err = right.VerifySubject(bun, edge1(digest.FromString("other")))
	if !errors.Is(err, ErrBadSignature) || strings.Contains(err.Error(), "does not verify with signer.pub") {
		t.Fatalf("%v", err)
	}
}
