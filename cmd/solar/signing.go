package main

import (
	"crypto"
	"errors"
	"fmt"
	"os"

	"github.com/solar-pipeline/solar/renderer/sign"
	"github.com/spf13/pflag"
)

// signingKeyEnv holds the signing key's PEM itself, for CI secrets.
const signingKeyEnv = "SOLAR_SIGNING_KEY"

// keyPasswordEnv holds the password of an encrypted signing key, as for
// cosign.
const keyPasswordEnv = "COSIGN_PASSWORD"

// signFlags say whether and with which key the charts written are signed.
type signFlags struct {
	keyFile string
}

func (f *signFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.keyFile, "signing-key", "", "sign every chart written with this private key: cosign generate-key-pair's (its password in $"+keyPasswordEnv+"), or an Ed25519 or ECDSA P-256 key, PEM (openssl genpkey -algorithm ed25519); default: the PEM in $"+signingKeyEnv+", if set. Flux and cosign verify with the public key (docs/signing.md)")
}

// key reads the signing key: nil when none is given.
func (f *signFlags) key(g *globals) (*sign.Key, error) {
	var pemBytes []byte
	from := "$" + signingKeyEnv
	switch {
	case f.keyFile != "":
		var err error
		from = "--signing-key " + f.keyFile
		if pemBytes, err = readKeyFile(g, f.keyFile); err != nil {
			return nil, fmt.Errorf("%s: %w", from, err)
		}
	case os.Getenv(signingKeyEnv) != "":
		pemBytes = []byte(os.Getenv(signingKeyEnv))
	default:
		return nil, nil
	}
	k, err := sign.ParseKey(pemBytes, keyPassword)
	switch {
	case errors.Is(err, sign.ErrNoPassword):
		return nil, fmt.Errorf("%s: the key is encrypted: set $%s to its password", from, keyPasswordEnv)
	case errors.Is(err, sign.ErrWrongPassword):
		return nil, fmt.Errorf("%s: $%s does not decrypt the key", from, keyPasswordEnv)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return k, nil
}

// keyPassword is $COSIGN_PASSWORD, where set (also when empty: cosign
// encrypts with an empty password too).
func keyPassword() ([]byte, bool) {
	p, ok := os.LookupEnv(keyPasswordEnv)
	return []byte(p), ok
}

// readKeyFile reads a private key file (sign.ReadKeyFile); one that others
// may read is read with a warning.
func readKeyFile(g *globals, name string) ([]byte, error) {
	b, perm, err := sign.ReadKeyFile(name)
	if perm&0o077 != 0 {
		fmt.Fprintf(g.stderr, "warning: %s may be read by others (mode %v): chmod 600 it\n", name, perm)
	}
	return b, err
}

// verifier verifies with the public keys in the files named (nil for none).
func verifier(files []string) (*sign.Verifier, error) {
	if len(files) == 0 {
		return nil, nil
	}
	pems, err := readPublicKeys(files)
	if err != nil {
		return nil, err
	}
	return sign.NewNamedVerifier(files, pems...)
}

// readPublicKeys reads PEM public key files, one key each, and returns
// each key as one PEM block: what goes into a Secret is the key, never
// whatever else the file holds.
func readPublicKeys(files []string) ([][]byte, error) {
	var pems [][]byte
	for _, name := range files {
		b, _, err := sign.ReadKeyFile(name)
		var pub crypto.PublicKey
		if err == nil {
			pub, err = sign.ParsePublicKey(b)
		}
		if err == nil {
			b, err = sign.PublicPEM(pub)
		}
		if err != nil {
			return nil, fmt.Errorf("public key %s: %w", name, err)
		}
		pems = append(pems, b)
	}
	return pems, nil
}
