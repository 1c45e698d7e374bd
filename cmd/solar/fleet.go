package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/solar-pipeline/solar/renderer/fleet"
)

func newFleetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Publish device-agent binaries and per-device upgrade attempts",
		Long: `fleet is solar's side of the fleet agent upgrade (docs/fleet.md): devices run an
agent that reconciles Podman workloads from NATS desired state, and a root
updater on each device replaces that agent.

  push-agent  push agent binaries as an OCI index by platform (immutable versions)
  apply       resolve DeviceUpgrade objects into one attempt per device, store
              each as an OCI artifact, and compare-and-set write it into the
              device's key in a NATS JetStream key-value bucket
  status      show each device's current attempt and reported state
  repair      clear a device's rollback-failed block, with a reason`,
		RunE: commandGroup,
	}
	cmd.AddCommand(newFleetPushAgentCmd(g), newFleetApplyCmd(g), newFleetStatusCmd(g), newFleetRepairCmd(g))
	return cmd
}

// natsFlags say where NATS is and how to log in, named as the NATS CLI names
// them. A password comes from $NATS_PASSWORD, never from an argument.
type natsFlags struct {
	server, creds, nkey, user, tlsCA, tlsCert, tlsKey string
	bucket                                            string
	replicas                                          int
}

func (f *natsFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.server, "nats", os.Getenv("NATS_URL"), "NATS server URLs, comma-separated (default $NATS_URL)")
	fl.StringVar(&f.creds, "creds", "", "NATS user credentials file (JWT and NKey seed)")
	fl.StringVar(&f.nkey, "nkey", "", "NATS NKey seed file")
	fl.StringVar(&f.user, "user", "", "NATS user name; the password is read from $NATS_PASSWORD")
	fl.StringVar(&f.tlsCA, "tlsca", "", "PEM file of CA certificates to trust for NATS TLS")
	fl.StringVar(&f.tlsCert, "tlscert", "", "client certificate for NATS TLS")
	fl.StringVar(&f.tlsKey, "tlskey", "", "client key for NATS TLS")
	fl.StringVar(&f.bucket, "bucket", "solar-fleet", "JetStream key-value bucket of the fleet")
}

// bucketMode says what connect does when the bucket does not exist.
type bucketMode int

const (
	// bucketMustExist: a missing bucket is an error, most likely a mistyped
	// --bucket (status, repair); nothing is created.
	bucketMustExist bucketMode = iota
	// bucketMayBeMissing: a missing bucket reads as empty (apply --dry-run:
	// the first apply creates it); nothing is created.
	bucketMayBeMissing
	// bucketCreate: a missing bucket is created with --replicas (apply).
	bucketCreate
)

// connect connects to NATS and opens the bucket as mode says. close ends the
// connection.
func (f *natsFlags) connect(ctx context.Context, g *globals, mode bucketMode) (b *fleet.Bucket, close func(), err error) {
	if f.server == "" {
		return nil, nil, fmt.Errorf("--nats is required (or $NATS_URL): the NATS servers of the fleet")
	}
	opts := []nats.Option{nats.Name("solar"), nats.Timeout(5 * time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if f.creds != "" {
		opts = append(opts, nats.UserCredentials(f.creds))
	}
	if f.nkey != "" {
		o, err := nats.NkeyOptionFromSeed(f.nkey)
		if err != nil {
			return nil, nil, fmt.Errorf("reading --nkey %s: %w", f.nkey, err)
		}
		opts = append(opts, o)
	}
	if f.user != "" {
		opts = append(opts, nats.UserInfo(f.user, os.Getenv("NATS_PASSWORD")))
	}
	if f.tlsCA != "" {
		opts = append(opts, nats.RootCAs(f.tlsCA))
	}
	if f.tlsCert != "" || f.tlsKey != "" {
		opts = append(opts, nats.ClientCert(f.tlsCert, f.tlsKey))
	}
	servers := redact(f.server)
	nc, err := nats.Connect(f.server, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to NATS %s: %w%s", servers, err, natsHint(err))
	}
	js, err := jetstream.New(nc)
	if err == nil {
		b, err = fleet.OpenBucket(ctx, js, f.bucket, f.replicas, mode == bucketCreate, g.log)
	}
	if err == nil && mode == bucketMustExist && !b.Exists() {
		err = fmt.Errorf("the key-value bucket %q does not exist: check --bucket (solar fleet apply creates it)", f.bucket)
	}
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("NATS %s: %w", servers, err)
	}
	return b, nc.Close, nil
}

// natsHint says which flags answer a NATS server's refusal to connect.
func natsHint(err error) string {
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "authorization violation"):
		return " (log in with --user and $NATS_PASSWORD, --creds or --nkey)"
	case strings.Contains(msg, "x509:"):
		return " (trust the server's CA with --tlsca)"
	}
	return ""
}

// redact drops user information (user:password@) from NATS URLs, for
// messages.
func redact(servers string) string {
	var out []string
	for _, s := range strings.Split(servers, ",") {
		if u, err := url.Parse(strings.TrimSpace(s)); err == nil && u.User != nil {
			u.User = nil
			s = u.String()
		}
		out = append(out, s)
	}
	return strings.Join(out, ",")
}
