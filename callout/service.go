// Package callout is the fleet's NATS auth callout: nats-server asks it,
// for each connection that is not a service user's, whether to let the
// client in and with which permissions. A device presents its bearer JWT
// from the identity provider (Zitadel); the callout verifies it (Verifier)
// and answers with a NATS user JWT, signed with the callout's account key,
// that allows that device's keys of the fleet's bucket and nothing else
// (Permissions). Anything else is refused: the callout fails closed, and so
// does the server when the callout does not answer.
package callout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nkeys"
)

// Service answers authorization requests.
type Service struct {
	// Verifier checks device tokens.
	Verifier *Verifier
	// AccountKey signs the answers and the user JWTs; its public key is
	// the issuer in the server's auth_callout block.
	AccountKey nkeys.KeyPair
	// XKey, when set, is the curve key whose public half is the xkey in
	// the server's auth_callout block: requests arrive sealed to it and
	// answers leave sealed to the server.
	XKey nkeys.KeyPair
	// Account is the NATS account devices are placed in (that of the
	// bucket), Bucket the fleet's bucket.
	Account, Bucket string
	// MaxTTL caps the user JWT's lifetime below the token's (0: the
	// token's); the server closes the connection when it ends, and the
	// device logs in again with a fresh token.
	MaxTTL time.Duration
	// Log gets one line per decision, never a token.
	Log *slog.Logger

	allowed, refused atomic.Int64
}

// Counts are the decisions taken so far.
func (s *Service) Counts() (allowed, refused int64) { return s.allowed.Load(), s.refused.Load() }

// Answer turns a request as nats-server sends it (serverXKey is its
// Nats-Server-Xkey header) into the answer to send back. An error means
// the request could not be answered at all (not from a server, or not
// for us); the server then refuses the client when its wait ends.
func (s *Service) Answer(ctx context.Context, msg []byte, serverXKey string) ([]byte, error) {
	if s.XKey != nil {
		if serverXKey == "" {
			return nil, errors.New("an unsealed request, but the callout has an xkey")
		}
		var err error
		if msg, err = s.XKey.Open(msg, serverXKey); err != nil {
			return nil, fmt.Errorf("opening the request: %w", err)
		}
	}
	req, err := jwt.DecodeAuthorizationRequestClaims(string(msg))
	if err != nil {
		return nil, fmt.Errorf("not an authorization request: %w", err)
	}
	if !nkeys.IsValidPublicServerKey(req.Issuer) {
		return nil, errors.New("an authorization request not signed by a server")
	}
	vr := jwt.CreateValidationResults()
	req.Validate(vr)
	if vr.IsBlocking(true) {
		return nil, fmt.Errorf("authorization request: %v", vr.Errors())
	}
	resp := jwt.NewAuthorizationResponseClaims(req.UserNkey)
	resp.Audience = req.Server.ID
	user, id, err := s.authorize(ctx, req)
	if err != nil {
		s.refused.Add(1)
		resp.Error = err.Error()
		s.log().Info("refused", "client", req.ClientInformation.Host, "name", req.ClientInformation.Name, "err", err)
	} else {
		s.allowed.Add(1)
		resp.Jwt = user
		s.log().Debug("allowed", "device", id, "client", req.ClientInformation.Host)
	}
	out, err := resp.Encode(s.AccountKey)
	if err != nil {
		return nil, err
	}
	if s.XKey != nil {
		sealed, err := s.XKey.Seal([]byte(out), serverXKey)
		return sealed, err
	}
	return []byte(out), nil
}

// authorize verifies the token of req and builds the device's user JWT.
func (s *Service) authorize(ctx context.Context, req *jwt.AuthorizationRequestClaims) (string, string, error) {
	token := req.ConnectOptions.Token
	if token == "" {
		return "", "", errors.New("no bearer token: a device connects with its identity token")
	}
	who, err := s.Verifier.Verify(ctx, token)
	if err != nil {
		return "", "", fmt.Errorf("identity token refused: %w", err)
	}
	perms, err := Permissions(s.Bucket, who.DeviceID)
	if err != nil {
		return "", "", err
	}
	uc := jwt.NewUserClaims(req.UserNkey)
	uc.Name = "device:" + who.DeviceID
	uc.Audience = s.Account
	uc.Permissions = perms
	// A plain client connection: not a websocket, MQTT or leaf node
	// listener a server may gain later.
	uc.AllowedConnectionTypes.Add(jwt.ConnectionTypeStandard)
	exp := who.Expiry
	if s.MaxTTL > 0 && time.Now().Add(s.MaxTTL).Before(exp) {
		exp = time.Now().Add(s.MaxTTL)
	}
	uc.Expires = exp.Unix()
	user, err := uc.Encode(s.AccountKey)
	return user, who.DeviceID, err
}

// discard is the log of a Service without one.
var discard = slog.New(slog.DiscardHandler)

func (s *Service) log() *slog.Logger {
	if s.Log == nil {
		return discard
	}
	return s.Log
}
