package fleetkv

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATS says where the fleet's NATS servers are, how to log in (as the NATS
// CLI names it), and which bucket to open how.
type NATS struct {
	// Servers are NATS URLs, comma-separated.
	Servers string
	// Creds is a user credentials file (JWT and NKey seed); NKey an NKey
	// seed file; User and Password a user's login.
	Creds, NKey, User, Password string
	// TLSCA is a PEM file of CA certificates to trust; TLSCert and TLSKey a
	// client certificate.
	TLSCA, TLSCert, TLSKey string
	// Bucket is the JetStream key-value bucket; Mode says what to do when
	// it is missing; Replicas are a created bucket's.
	Bucket   string
	Mode     BucketMode
	Replicas int
	Log      *slog.Logger // nil: slog's default
}

// BucketMode says what Connect and OpenBucket do when the bucket does not
// exist.
type BucketMode int

const (
	// MustExist: a missing bucket is an error, most likely a mistyped name
	// (status, repair); nothing is created.
	MustExist BucketMode = iota
	// MayBeMissing: a missing bucket reads as empty and every write fails
	// (a dry run: the first apply creates it); nothing is created.
	MayBeMissing
	// Create: a missing bucket is created with the replicas given (apply).
	Create
)

// Connect connects to NATS and opens the bucket as n.Mode says; close ends
// the connection. Its errors never hold a password; they name the flags of
// solar fleet that answer them (those of the NATS CLI).
func Connect(ctx context.Context, n NATS) (b *Bucket, close func(), err error) {
	if n.Servers == "" {
		return nil, nil, fmt.Errorf("--nats is required (or $NATS_URL): the NATS servers of the fleet")
	}
	opts, err := n.options()
	if err != nil {
		return nil, nil, err
	}
	servers := redact(n.Servers)
	nc, err := nats.Connect(n.Servers, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to NATS %s: %w%s", servers, err, natsHint(err))
	}
	js, err := jetstream.New(nc)
	if err == nil {
		b, err = OpenBucket(ctx, js, n.Bucket, n.Replicas, n.Mode, n.Log)
	}
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("NATS %s: %w", servers, err)
	}
	return b, nc.Close, nil
}

// options are the NATS client options of n: a connect timeout, and
// reconnects for as long as the context allows.
func (n NATS) options() ([]nats.Option, error) {
	opts := []nats.Option{nats.Name("solar"), nats.Timeout(5 * time.Second), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond)}
	if n.Creds != "" {
		opts = append(opts, nats.UserCredentials(n.Creds))
	}
	if n.NKey != "" {
		o, err := nats.NkeyOptionFromSeed(n.NKey)
		if err != nil {
			return nil, fmt.Errorf("reading --nkey %s: %w", n.NKey, err)
		}
		opts = append(opts, o)
	}
	if n.User != "" {
		opts = append(opts, nats.UserInfo(n.User, n.Password))
	}
	if n.TLSCA != "" {
		opts = append(opts, nats.RootCAs(n.TLSCA))
	}
	if n.TLSCert != "" || n.TLSKey != "" {
		opts = append(opts, nats.ClientCert(n.TLSCert, n.TLSKey))
	}
	return opts, nil
}

// natsHint says how to answer a NATS server's refusal to connect.
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
