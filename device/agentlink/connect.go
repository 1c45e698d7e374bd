package agentlink

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/solar-pipeline/solar/device/wire"
)

// ConnectOptions say how a device connects to the fleet's NATS.
type ConnectOptions struct {
	// Servers are the NATS URLs, comma-separated.
	Servers string
	// DeviceID is the device's id: its reply and watch subjects are under
	// wire.InboxPrefix(DeviceID), the only inbox the auth callout lets the
	// device subscribe to.
	DeviceID string
	// TokenFile holds the device's bearer JWT, written by the device's
	// identity setup: the connect token, read at every connect and
	// reconnect, so that a renewed token is used from the next reconnect
	// on. Empty: no token.
	TokenFile string
	// CAFile is PEM certificates to trust for TLS besides the system's.
	CAFile string
	// ReconnectWait is the pause between reconnects (2 s when zero).
	ReconnectWait time.Duration
	Log           *slog.Logger
}

// maxToken bounds the token file: a JWT is a few KiB.
const maxToken = 16 << 10

// Connect returns the device's NATS connection. It does not wait for the
// server: a connection that is not up yet, or lost, is tried again without
// end (the readiness checks wait for it). An authorization error (a token
// expired or not renewed yet) does not end it either: the next reconnect
// reads the token file again. The token appears in no log and no error.
func Connect(o ConnectOptions) (*nats.Conn, error) {
	prefix, err := wire.InboxPrefix(o.DeviceID)
	if err != nil {
		return nil, err
	}
	if o.Servers == "" {
		return nil, errors.New("no NATS server")
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.ReconnectWait <= 0 {
		o.ReconnectWait = 2 * time.Second
	}
	opts := []nats.Option{
		nats.Name("solar-fleet-agent " + o.DeviceID),
		nats.CustomInboxPrefix(prefix),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(o.ReconnectWait),
		// Without it, the same authorization error twice in a row on a
		// server closes the connection for good: a token that expired
		// before the identity setup renewed it would end the agent's link.
		nats.IgnoreAuthErrorAbort(),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("NATS disconnected", "err", err) }),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("NATS reconnected", "server", nc.ConnectedUrlRedacted()) }),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { log.Warn("NATS", "err", err) }),
	}
	if o.TokenFile != "" {
		// A path that cannot be read now is a mistake of the setup: said
		// at once. Later failures are logged, and the connect goes without
		// a token (the server refuses it; the next reconnect reads again).
		if _, err := readToken(o.TokenFile); err != nil {
			return nil, err
		}
		opts = append(opts, nats.TokenHandler(func() string {
			tok, err := readToken(o.TokenFile)
			if err != nil {
				log.Error("reading the token file", "err", err)
			}
			return tok
		}))
	}
	if o.CAFile != "" {
		opts = append(opts, nats.RootCAs(o.CAFile))
	}
	nc, err := nats.Connect(o.Servers, opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to NATS: %w", err)
	}
	return nc, nil
}

// readToken reads the token file: a regular file (opened without blocking,
// so that a FIFO is refused, not waited on), at most maxToken bytes,
// whitespace around the token dropped. Errors name the file, never the
// content.
func readToken(path string) (string, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", fmt.Errorf("the token file %s is a symbolic link: refused", path)
	}
	if err != nil {
		return "", fmt.Errorf("the token file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("the token file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("the token file %s is not a regular file", path)
	}
	// The token lets its holder in as this device: only its owner, this
	// agent's user, may read or write it.
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() || fi.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("the token file %s must be this agent's user's alone (owner uid %d, mode 0600 or 0400): refused", path, os.Geteuid())
	}
	b, err := io.ReadAll(io.LimitReader(f, maxToken+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("the token file %s: %w", path, err)
	case len(b) > maxToken:
		return "", fmt.Errorf("the token file %s is larger than %d bytes", path, maxToken)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("the token file %s is empty", path)
	}
	return tok, nil
}
