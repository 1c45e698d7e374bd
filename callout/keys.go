package callout

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/nats-io/nkeys"
)

// Key file names that NewKeys writes into its folder.
const (
	AccountKeyFile = "account.nk"
	XKeyFile       = "xkey.nk"
)

// NewKeys writes a new account key and curve key (nkey seeds, mode 0600)
// into dir and returns their public halves: the issuer and the xkey of the
// server's auth_callout block. It refuses to overwrite a key.
func NewKeys(dir string) (issuer, xkey string, err error) {
	acc, err := nkeys.CreateAccount()
	if err != nil {
		return "", "", err
	}
	x, err := nkeys.CreateCurveKeys()
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	for name, kp := range map[string]nkeys.KeyPair{AccountKeyFile: acc, XKeyFile: x} {
		seed, _ := kp.Seed()
		if err := writeNew(filepath.Join(dir, name), append(seed, '\n')); err != nil {
			return "", "", err
		}
	}
	issuer, _ = acc.PublicKey()
	xkey, _ = x.PublicKey()
	return issuer, xkey, nil
}

func writeNew(file string, b []byte) error {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// LoadKeys reads the callout's account key and, when xkeyFile is set, its
// curve key (ReadKey), each checked to be of its kind.
func LoadKeys(accountFile, xkeyFile string) (account, xkey nkeys.KeyPair, err error) {
	if account, err = ReadKey(accountFile); err != nil {
		return nil, nil, fmt.Errorf("the account key: %w", err)
	}
	if pub, _ := account.PublicKey(); !nkeys.IsValidPublicAccountKey(pub) {
		return nil, nil, fmt.Errorf("%s: not an account key (solar-auth-callout keys)", accountFile)
	}
	if xkeyFile == "" {
		return account, nil, nil
	}
	if xkey, err = ReadKey(xkeyFile); err != nil {
		return nil, nil, fmt.Errorf("the xkey: %w", err)
	}
	if pub, _ := xkey.PublicKey(); !nkeys.IsValidPublicCurveKey(pub) {
		return nil, nil, fmt.Errorf("%s: not a curve key (solar-auth-callout keys)", xkeyFile)
	}
	return account, xkey, nil
}

// ReadKey reads an nkey seed from file, which only its owner may read.
func ReadKey(file string) (nkeys.KeyPair, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", file)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s has mode %04o: group or others may read the key (chmod 600)", file, fi.Mode().Perm())
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, err
	}
	kp, err := nkeys.FromSeed(bytes.TrimSpace(b))
	if err != nil {
		return nil, fmt.Errorf("%s: not an nkey seed", file)
	}
	return kp, nil
}
