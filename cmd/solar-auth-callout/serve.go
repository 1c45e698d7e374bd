package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/solar-pipeline/solar/callout"
)

// serve connects to NATS and answers until ctx ends.
func serve(ctx context.Context, c *config, stderr io.Writer) error {
	level := slog.LevelInfo
	if c.verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	s, err := service(c, log)
	if err != nil {
		return err
	}
	opts := []nats.Option{
		nats.Name("solar-auth-callout"),
		nats.UserInfo(c.user, os.Getenv("NATS_PASSWORD")),
		nats.MaxReconnects(-1),
		nats.Timeout(10 * time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) { log.Warn("disconnected from NATS", "err", err) }),
		nats.ReconnectHandler(func(*nats.Conn) { log.Info("reconnected to NATS") }),
	}
	if c.natsCA != "" {
		opts = append(opts, nats.RootCAs(c.natsCA))
	}
	// A service started before its server waits for it, as after a reboot.
	var nc *nats.Conn
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		if nc, err = nats.Connect(c.nats, opts...); err == nil {
			break
		}
		log.Warn("connecting to NATS", "nats", c.nats, "err", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("connecting to NATS %s: %w", c.nats, err)
		case <-time.After(wait):
		}
	}
	defer nc.Close()
	log.Info("answering authorization requests", "nats", nc.ConnectedUrlRedacted(), "issuer", c.issuer.URL, "account", c.account, "bucket", c.bucket)
	return callout.Serve(ctx, nc, s, c.workers)
}

// service reads the keys and builds the callout.
func service(c *config, log *slog.Logger) (*callout.Service, error) {
	acc, xkp, err := callout.LoadKeys(c.accountKey, c.xkey)
	if err != nil {
		return nil, err
	}
	if c.issuer.HTTPClient, err = httpClient(c.issuerCA); err != nil {
		return nil, err
	}
	return &callout.Service{
		Verifier:   callout.NewVerifier(c.issuer),
		AccountKey: acc,
		XKey:       xkp,
		Account:    c.account,
		Bucket:     c.bucket,
		MaxTTL:     c.maxTTL,
		Log:        log,
	}, nil
}
