// Command solar-auth-callout is the fleet's NATS auth callout (docs/fleet.md,
// "Device identity"): nats-server sends it each device's connection, it
// verifies the device's identity token against the issuer (Zitadel) and
// answers with the permissions of that device alone (package callout).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/solar-pipeline/solar/callout"
	"github.com/solar-pipeline/solar/internal/buildinfo"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); errors.Is(err, flag.ErrHelp) {
		return
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "solar-auth-callout:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "--version", "-version":
			// As the solar CLI says it.
			fmt.Fprintf(stdout, "solar-auth-callout %s\n", buildinfo.Read())
			return nil
		case "keys":
			return keys(args[1:], stdout, stderr)
		case "token":
			return token(args[1:], stdout, stderr)
		case "check":
			return check(args[1:], stdout, stderr)
		}
	}
	c, err := parseServe(args, stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return serve(ctx, c, stderr)
}

// keys: solar-auth-callout keys DIR.
func keys(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("keys", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: solar-auth-callout keys DIR\n\nWrites a new account key (account.nk) and curve key (xkey.nk), mode 0600, into DIR\nand prints their public halves: the issuer and xkey of nats-server's auth_callout block.\n")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return errors.New("keys takes one folder")
	}
	issuer, xkey, err := callout.NewKeys(fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "issuer: %s\nxkey: %s\n", issuer, xkey)
	return nil
}

// config is what the serve flags say.
type config struct {
	nats, user, natsCA, issuerCA, accountKey, xkey string
	issuer                                         callout.Issuer
	account, bucket                                string
	workers                                        int
	maxTTL                                         time.Duration
	verbose                                        bool
}

func parseServe(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("solar-auth-callout", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.nats, "nats", "nats://127.0.0.1:4222", "NATS servers; the callout logs in as --user with the password in $NATS_PASSWORD")
	fs.StringVar(&c.user, "user", "auth-callout", "the callout's own user (an auth_users entry of the callout's account)")
	fs.StringVar(&c.natsCA, "nats-ca", "", "PEM file of the CA that signs the NATS server's certificate")
	fs.StringVar(&c.issuer.URL, "issuer", "", "the identity provider's issuer URL, https (required)")
	fs.StringVar(&c.issuer.Audience, "audience", "", "the audience device tokens must carry (required)")
	fs.StringVar(&c.issuer.DeviceClaim, "device-claim", "device_id", "the token claim that carries the device id")
	fs.StringVar(&c.issuerCA, "issuer-ca", "", "PEM file of a CA to trust for the issuer, besides the system's")
	fs.DurationVar(&c.issuer.Skew, "skew", 30*time.Second, "clock skew allowed on nbf and iat")
	fs.DurationVar(&c.issuer.KeysMaxAge, "keys-max-age", 5*time.Minute, "how long the issuer's key set is trusted before it is fetched again")
	fs.DurationVar(&c.issuer.MinRefetch, "min-refetch", 5*time.Second, "least time between two fetches of the issuer's keys (an unknown key id fetches them at once)")
	fs.StringVar(&c.accountKey, "account-key", "", "nkey seed file of the callout's account key, mode 0600 (solar-auth-callout keys; required)")
	fs.StringVar(&c.xkey, "xkey", "", "nkey seed file of the curve key, when the server's auth_callout has an xkey")
	fs.StringVar(&c.account, "account", "FLEET", "the NATS account devices are placed in: the bucket's")
	fs.StringVar(&c.bucket, "bucket", "solar-fleet", "the fleet's key-value bucket")
	fs.IntVar(&c.workers, "workers", 2*runtime.GOMAXPROCS(0), "requests answered at once")
	fs.DurationVar(&c.maxTTL, "max-ttl", 0, "cap on a device's login, below its token's expiry (0: the token's)")
	fs.BoolVar(&c.verbose, "v", false, "log every allowed device too")
	fs.Usage = func() {
		fmt.Fprint(stderr, `solar-auth-callout: the fleet's NATS auth callout (docs/fleet.md).

nats-server (authorization { auth_callout { ... } }) sends it every connection
that is not a service user's. A device connects with its identity token from
the issuer (Zitadel) as its NATS token; the callout verifies the token's
signature against the issuer's keys (discovery, JWKS), its iss, aud, exp, nbf,
iat and device claim, and answers with a NATS user that may read and watch
attempt.<id>, write state.<id> and nothing else. Anything else is refused.

Usage:
  solar-auth-callout --issuer URL --audience AUD --account-key FILE [flags]   serve
  solar-auth-callout keys DIR                      a new account key and xkey
  solar-auth-callout token --issuer URL --key-file FILE   a device's token (JWT profile grant)
  solar-auth-callout check --issuer URL --audience AUD TOKEN-FILE   what the callout would allow
  solar-auth-callout --version

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var missing []string
	for _, f := range []struct{ name, v string }{{"--issuer", c.issuer.URL}, {"--audience", c.issuer.Audience}, {"--account-key", c.accountKey}} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 || fs.NArg() > 0 {
		fs.Usage()
		return nil, fmt.Errorf("missing %s (or an extra argument)", strings.Join(missing, ", "))
	}
	if !strings.HasPrefix(c.issuer.URL, "https://") {
		return nil, fmt.Errorf("--issuer %s: the issuer must be https", c.issuer.URL)
	}
	return c, nil
}
