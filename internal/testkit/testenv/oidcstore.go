package testenv

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/google/uuid"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// errNotSupported answers what the test provider does not do: it serves
// discovery, the JWKS, the JWT profile grant, the authorization code flow
// and userinfo; no refresh, client credentials, introspection or
// revocation.
var errNotSupported = errors.New("not supported in the test provider")

// oidcStore is the provider's op.Storage: its signing keys, the devices
// (machine users) with their public keys, and the people, web clients and
// authorization requests of the code flow (oidcusers.go). op calls it from
// its handlers, so every method is safe for concurrent use.
type oidcStore struct {
	audience string

	mu       sync.RWMutex
	keys     []*signingKey // published in the JWKS, the current one last
	devices  map[string]*oidcDevice
	byID     map[string]*oidcDevice // by device id
	lifetime time.Duration

	users        map[string]*oidcUser // by user name
	usersByID    map[string]*oidcUser
	clients      map[string]*oidcClient
	authRequests map[string]*authRequest
	codes        map[string]string // code → auth request id
}

// oidcDevice is a machine user: Zitadel's user id, the device id it
// carries as the claim device_id, and the key id and public key of its
// machine key.
type oidcDevice struct {
	id, userID, keyID string
	pub               *rsa.PublicKey
}

// signingKey is one of the provider's keys; it is op.SigningKey (the
// private half) and publicKey is op.Key (what the JWKS publishes).
type signingKey struct {
	kid  string
	priv *rsa.PrivateKey
}

func (k *signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k *signingKey) Key() any                                    { return k.priv }
func (k *signingKey) ID() string                                  { return k.kid }

type publicKey struct{ k *signingKey }

func (p publicKey) ID() string                         { return p.k.kid }
func (p publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (p publicKey) Use() string                        { return "sig" }
func (p publicKey) Key() any                           { return &p.k.priv.PublicKey }

// newSigningKey makes an RSA 2048 key with a random key id.
func newSigningKey() (*signingKey, error) {
	priv, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generating a signing key: %w", err)
	}
	return &signingKey{kid: uuid.NewString(), priv: priv}, nil
}

// current is the key the provider signs with.
func (s *oidcStore) current() *signingKey {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.keys[len(s.keys)-1]
}

// device is the machine user userID, or an error.
func (s *oidcStore) device(userID string) (*oidcDevice, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d, ok := s.devices[userID]
	if !ok {
		return nil, fmt.Errorf("user %q: not found", userID)
	}
	return d, nil
}

// The JWT profile grant (op.JWTProfile) calls, in order:
// GetKeyByIDAndClientID (the assertion's signature), ValidateJWTProfileScopes,
// JWTProfileTokenType, CreateAccessToken, GetPrivateClaimsFromScopes and
// SigningKey. Discovery calls SignatureAlgorithms, the JWKS KeySet.

// GetKeyByIDAndClientID is the public key of a device's machine key: the
// assertion's iss (= sub) is clientID, its kid keyID.
func (s *oidcStore) GetKeyByIDAndClientID(_ context.Context, keyID, clientID string) (*jose.JSONWebKey, error) {
	d, err := s.device(clientID)
	if err != nil {
		return nil, err
	}
	if d.keyID != keyID {
		return nil, fmt.Errorf("user %q: no key %q", clientID, keyID)
	}
	return &jose.JSONWebKey{Key: d.pub, KeyID: keyID, Algorithm: string(jose.RS256), Use: "sig"}, nil
}

// ValidateJWTProfileScopes grants a known device the scopes it asks for.
func (s *oidcStore) ValidateJWTProfileScopes(_ context.Context, userID string, scopes []string) ([]string, error) {
	if _, err := s.device(userID); err != nil {
		return nil, err
	}
	return scopes, nil
}

// JWTProfileTokenType makes the JWT profile grant's access token a JWT, as
// Zitadel's machine users can have it (op's default is an opaque token).
func (s *oidcStore) JWTProfileTokenType(context.Context, op.TokenRequest) (op.AccessTokenType, error) {
	return op.AccessTokenTypeJWT, nil
}

// CreateAccessToken gives an access token its id and expiry. For the JWT
// profile grant, op takes the token's aud from the request, which is the
// assertion's (the issuer); Zitadel adds a project's id when the scope asks
// for it, the test provider adds Audience always, before op builds the
// claims from the same request. A user's token (the code flow) lives
// userTokenLifetime, its aud is the client.
func (s *oidcStore) CreateAccessToken(_ context.Context, request op.TokenRequest) (string, time.Time, error) {
	if _, ok := request.(*authRequest); ok {
		return uuid.NewString(), time.Now().Add(userTokenLifetime), nil
	}
	req, ok := request.(*oidc.JWTTokenRequest)
	if !ok {
		return "", time.Time{}, fmt.Errorf("access token for a %T: %w", request, errNotSupported)
	}
	if !slices.Contains(req.Audience, s.audience) {
		req.Audience = append(req.Audience, s.audience)
	}
	s.mu.RLock()
	lifetime := s.lifetime
	s.mu.RUnlock()
	return uuid.NewString(), time.Now().Add(lifetime), nil
}

// GetPrivateClaimsFromScopes is where op takes a JWT access token's private
// claims from: a device's device_id, a user's preferred_username, email and
// groups.
func (s *oidcStore) GetPrivateClaimsFromScopes(_ context.Context, userID, _ string, _ []string) (map[string]any, error) {
	if u, err := s.user(userID); err == nil {
		return u.claims(), nil
	}
	d, err := s.device(userID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"device_id": d.id}, nil
}

// SigningKey is the current key.
func (s *oidcStore) SigningKey(context.Context) (op.SigningKey, error) {
	return s.current(), nil
}

// SignatureAlgorithms are the ones discovery announces.
func (s *oidcStore) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

// KeySet is the JWKS: every key not retired.
func (s *oidcStore) KeySet(context.Context) ([]op.Key, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]op.Key, len(s.keys))
	for i, k := range s.keys {
		keys[i] = publicKey{k}
	}
	return keys, nil
}

// Health reports the storage ready (op's /ready).
func (s *oidcStore) Health(context.Context) error { return nil }

// SetUserinfoFromScopes is deprecated in op and empty everywhere:
// SetUserinfoFromRequest (oidcusers.go) fills the ID token.
func (s *oidcStore) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}

// What follows is op.Storage the test provider does not serve.

func (s *oidcStore) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errNotSupported
}

func (s *oidcStore) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, errNotSupported
}

func (s *oidcStore) TerminateSession(context.Context, string, string) error { return errNotSupported }

func (s *oidcStore) RevokeToken(context.Context, string, string, string) *oidc.Error {
	return oidc.ErrRequestNotSupported().WithParent(errNotSupported)
}

func (s *oidcStore) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *oidcStore) SetIntrospectionFromToken(context.Context, *oidc.IntrospectionResponse, string, string, string) error {
	return errNotSupported
}

var (
	_ op.Storage                = (*oidcStore)(nil)
	_ op.JWTProfileTokenStorage = (*oidcStore)(nil)
)
