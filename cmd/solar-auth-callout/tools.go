package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/solar-pipeline/solar/internal/capool"

	"github.com/solar-pipeline/solar/callout"
)

// token: solar-auth-callout token --issuer URL --key-file FILE.
func token(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	issuer := fs.String("issuer", "", "the identity provider's issuer URL (required)")
	keyFile := fs.String("key-file", "", "the device's machine key, as Zitadel hands it out (JSON; required)")
	ca := fs.String("issuer-ca", "", "PEM file of a CA to trust for the issuer, besides the system's")
	out := fs.String("out", "", "write the token into this file (mode 0600, replaced in one rename, as the agent's --token-file wants it) instead of stdout")
	var scopes stringList
	fs.Var(&scopes, "scope", "a scope to ask for besides openid, e.g. urn:zitadel:iam:org:project:id:ID:aud; repeatable")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: solar-auth-callout token --issuer URL --key-file FILE [--scope S]... [--out FILE]\n\nWhat a device's identity setup does: the JWT profile grant of its machine key at the\nissuer, printing the access token (the device's NATS token) on stdout or into --out.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *issuer == "" || *keyFile == "" {
		fs.Usage()
		return errors.New("token needs --issuer and --key-file")
	}
	hc, err := httpClient(*ca)
	if err != nil {
		return err
	}
	key, err := os.ReadFile(*keyFile)
	if err != nil {
		return err
	}
	tok, err := callout.DeviceToken(context.Background(), *issuer, hc, key, scopes)
	if err != nil {
		return err
	}
	if *out == "" {
		fmt.Fprintln(stdout, tok)
		return nil
	}
	return writeToken(*out, tok)
}

// writeToken replaces file with tok: a new file of mode 0600 beside it,
// renamed over it, so that a reader sees the old token or the new one.
func writeToken(file, tok string) error {
	f, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // after the rename, there is nothing to remove
	if _, err := f.WriteString(tok + "\n"); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), file)
}

// check: solar-auth-callout check --issuer URL --audience AUD TOKEN-FILE.
func check(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var is callout.Issuer
	fs.StringVar(&is.URL, "issuer", "", "the identity provider's issuer URL (required)")
	fs.StringVar(&is.Audience, "audience", "", "the audience device tokens must carry (required)")
	fs.StringVar(&is.DeviceClaim, "device-claim", "device_id", "the token claim that carries the device id")
	ca := fs.String("issuer-ca", "", "PEM file of a CA to trust for the issuer, besides the system's")
	bucket := fs.String("bucket", "solar-fleet", "the fleet's key-value bucket")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: solar-auth-callout check --issuer URL --audience AUD TOKEN-FILE\n\nVerifies a device's token as the callout does and prints the device, the token's\nexpiry and the NATS permissions the callout would give it; exit 1 if it would refuse it.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if is.URL == "" || is.Audience == "" || fs.NArg() != 1 {
		fs.Usage()
		return errors.New("check needs --issuer, --audience and one token file")
	}
	var err error
	if is.HTTPClient, err = httpClient(*ca); err != nil {
		return err
	}
	raw, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		return err
	}
	who, err := callout.NewVerifier(is).Verify(context.Background(), strings.TrimSpace(string(raw)))
	if err != nil {
		return fmt.Errorf("the callout would refuse this token: %w", err)
	}
	p, err := callout.Permissions(*bucket, who.DeviceID)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "device:  %s\nexpires: %s\npublish: %s\nsubscribe: %s\n",
		who.DeviceID, who.Expiry.UTC().Format(time.RFC3339), strings.Join(p.Pub.Allow, " "), strings.Join(p.Sub.Allow, " "))
	return nil
}

// httpClient trusts the system's CAs and, if set, those in the PEM file ca.
func httpClient(ca string) (*http.Client, error) {
	if ca == "" {
		return &http.Client{Timeout: 15 * time.Second}, nil
	}
	pool, err := capool.WithFile(ca)
	if err != nil {
		return nil, fmt.Errorf("--issuer-ca: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr, Timeout: 15 * time.Second}, nil
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
