package sign

import (
	"context"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"

	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Password gives the password of an encrypted key; ok is false where none
// was given (an empty password is a password: cosign encrypts with one).
type Password func() (pass []byte, ok bool)

// Key is a signing key: Ed25519, or ECDSA on P-256, the key cosign
// generate-key-pair makes.
type Key struct {
	priv crypto.Signer
	pub  []byte // PKIX DER
}

// encryptedTypes are the PEM types of encrypted private keys: cosign's
// (generate-key-pair; "COSIGN" before cosign v2) and PKCS #8's.
var encryptedTypes = map[string]bool{
	"ENCRYPTED SIGSTORE PRIVATE KEY": true,
	"ENCRYPTED COSIGN PRIVATE KEY":   true,
	"ENCRYPTED PRIVATE KEY":          true,
}

// ParseKey reads a private key, PEM: PKCS #8 ("PRIVATE KEY", as openssl
// genpkey writes it), SEC 1 ("EC PRIVATE KEY"), or encrypted with the
// password pass gives, as cosign generate-key-pair writes it. The key is
// Ed25519 or ECDSA P-256. pass may be nil for keys that are not encrypted.
func ParseKey(pemBytes []byte, pass Password) (*Key, error) {
	b, _ := pem.Decode(pemBytes)
	if b == nil {
		return nil, errors.New("no PEM private key found: make one with cosign generate-key-pair, or openssl genpkey -algorithm ed25519")
	}
	var pf cryptoutils.PassFunc
	if encryptedTypes[b.Type] {
		pw, ok := []byte(nil), false
		if pass != nil {
			pw, ok = pass()
		}
		if !ok {
			return nil, ErrNoPassword
		}
		pf = func(bool) ([]byte, error) { return pw, nil }
	} else if b.Type != "PRIVATE KEY" && b.Type != "EC PRIVATE KEY" {
		return nil, fmt.Errorf("a PEM %q where a private key belongs: make one with cosign generate-key-pair, or openssl genpkey -algorithm ed25519", b.Type)
	}
	k, err := cryptoutils.UnmarshalPEMToPrivateKey(pem.EncodeToMemory(b), pf)
	switch {
	case err != nil && pf != nil:
		// The decryption's own errors say nothing more, and never the password.
		return nil, ErrWrongPassword
	case err != nil:
		return nil, fmt.Errorf("the signing key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("the signing key is %s: Solar signs with Ed25519 or ECDSA P-256", keyKind(k))
	}
	return NewKey(signer)
}

// NewKey is the Key of priv, an ed25519.PrivateKey or an ECDSA P-256
// *ecdsa.PrivateKey.
func NewKey(priv crypto.Signer) (*Key, error) {
	switch k := priv.(type) {
	case ed25519.PrivateKey:
	case *ecdsa.PrivateKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("an ECDSA key on %s: Solar signs with Ed25519 or ECDSA P-256 (what Flux verifies with SHA-256)", k.Curve.Params().Name)
		}
	default:
		return nil, fmt.Errorf("the signing key is %s: Solar signs with Ed25519 or ECDSA P-256", keyKind(priv))
	}
	pub, err := x509.MarshalPKIXPublicKey(priv.Public())
	if err != nil {
		return nil, err
	}
	return &Key{priv: priv, pub: pub}, nil
}

// PublicPEM is the public key, PEM "PUBLIC KEY": what a Flux Secret's
// *.pub entry and cosign verify --key take.
func (k *Key) PublicPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: k.pub})
}

// keypair is sigstore-go's sign.Keypair for a Key: pure Ed25519 or ECDSA
// P-256 with SHA-256, and a hint that is the key's SHA-256 fingerprint (no
// key id in the envelope, which both verifiers want empty).
type keypair struct{ k *Key }

func (p keypair) ecdsa() bool { _, ok := p.k.priv.(*ecdsa.PrivateKey); return ok }

func (p keypair) GetHashAlgorithm() protocommon.HashAlgorithm {
	if p.ecdsa() {
		return protocommon.HashAlgorithm_SHA2_256
	}
	return protocommon.HashAlgorithm_SHA2_512
}

func (p keypair) GetSigningAlgorithm() protocommon.PublicKeyDetails {
	if p.ecdsa() {
		return protocommon.PublicKeyDetails_PKIX_ECDSA_P256_SHA_256
	}
	return protocommon.PublicKeyDetails_PKIX_ED25519
}

func (p keypair) GetHint() []byte {
	sum := sha256.Sum256(p.k.pub)
	return []byte(base64.StdEncoding.EncodeToString(sum[:]))
}

func (p keypair) GetKeyAlgorithm() string {
	if p.ecdsa() {
		return "ECDSA"
	}
	return "ED25519"
}

func (p keypair) GetPublicKey() crypto.PublicKey { return p.k.priv.Public() }

func (p keypair) GetPublicKeyPem() (string, error) { return string(p.k.PublicPEM()), nil }

// SignData signs data: Ed25519 over the data itself, ECDSA over its
// SHA-256 with the nonce RFC 6979 derives from the key and the digest (a
// nil random source), so that the same chart gets the same signature at
// every run, as with Ed25519.
func (p keypair) SignData(_ context.Context, data []byte) ([]byte, []byte, error) {
	if !p.ecdsa() {
		sig, err := p.k.priv.Sign(nil, data, crypto.Hash(0))
		return sig, data, err
	}
	sum := sha256.Sum256(data)
	sig, err := p.k.priv.Sign(nil, sum[:], crypto.SHA256)
	return sig, sum[:], err
}

// keyKind names a key's algorithm in words: "an RSA key".
func keyKind(k any) string {
	switch k.(type) {
	case *rsa.PrivateKey:
		return "an RSA key"
	case *ecdh.PrivateKey:
		return "an ECDH key"
	}
	return fmt.Sprintf("a %T", k)
}
