package testenv

import (
	"context"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/zitadel/oidc/v3/pkg/client"
	"github.com/zitadel/oidc/v3/pkg/crypto"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/sync/errgroup"

	"github.com/solar-pipeline/solar/internal/testkit/testpki"
)

// OIDC is a running OpenID Provider (zitadel/oidc's op package, the library
// Zitadel is built on) on https://127.0.0.1:PORT, standing in for Zitadel:
// devices are machine users with a machine key, and get their access tokens
// with the JWT profile grant (urn:ietf:params:oauth:grant-type:jwt-bearer).
// People (AddUser) log in to web clients (AddClient) with the authorization
// code flow: the provider's login page (a form: user name and password),
// the code exchange at the token endpoint (client secret, PKCE if the
// client sends it), ID and access tokens with their groups, and userinfo.
// It serves discovery, the JWKS, that grant and that flow; everything else
// answers "not supported in the test provider". Its methods are safe for
// concurrent use, but those taking t fail the test and so belong on the
// test's goroutine (Tokens is the parallel way).
type OIDC struct {
	// Issuer is https://127.0.0.1:PORT; discovery is at
	// Issuer+"/.well-known/openid-configuration".
	Issuer string
	// CAFile is the PEM of the provider's self-signed certificate, to
	// trust (for other processes; HTTPClient trusts it).
	CAFile string
	// Audience is what every device token's aud contains: "solar-fleet".
	Audience string

	cert          *x509.Certificate
	store         *oidcStore
	transport     *http.Transport
	tokenEndpoint string
	jwksFetches   atomic.Int64
	devices       atomic.Int64
	users         atomic.Int64
	clients       atomic.Int64
	down          atomic.Bool
}

// oidcCryptoKey is op's key for what it encrypts (opaque tokens, state): the
// test provider issues none, but op wants one.
var oidcCryptoKey = [32]byte([]byte("solar-testenv-oidc-crypto-key-32"))

// StartOIDC starts a provider with one signing key and no device, user or
// client, and serves until t's cleanup. Device tokens live 5 minutes
// (SetTokenLifetime), users' tokens an hour.
func StartOIDC(t testing.TB) *OIDC {
	t.Helper()
	der, certKey, err := testpki.SelfSigned(time.Now())
	require.NoError(t, err)
	o := &OIDC{CAFile: filepath.Join(t.TempDir(), "ca.pem"), Audience: "solar-fleet"}
	require.NoError(t, os.WriteFile(o.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644))
	key, err := newSigningKey()
	require.NoError(t, err)
	o.store = &oidcStore{audience: o.Audience, keys: []*signingKey{key}, lifetime: 5 * time.Minute,
		devices: map[string]*oidcDevice{}, byID: map[string]*oidcDevice{},
		users: map[string]*oidcUser{}, usersByID: map[string]*oidcUser{}, clients: map[string]*oidcClient{},
		authRequests: map[string]*authRequest{}, codes: map[string]string{}}

	srv := httptest.NewUnstartedServer(nil)
	o.Issuer = "https://" + srv.Listener.Addr().String()
	provider, err := op.NewProvider(&op.Config{CryptoKey: oidcCryptoKey, CodeMethodS256: true, AuthMethodPost: true},
		o.store, op.StaticIssuer(o.Issuer))
	require.NoError(t, err)
	jwks := provider.KeysEndpoint().Relative()
	// op's callback after the login: it makes the code and redirects to the
	// client (op.AuthCallbackURL, with the static issuer).
	callback := provider.AuthorizationEndpoint().Absolute(o.Issuer) + "/callback?id="
	mux := http.NewServeMux()
	mux.Handle(loginPath, o.login(func(id string) string { return callback + url.QueryEscape(id) }))
	mux.Handle("/", provider)
	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.down.Load() {
			http.Error(w, "the test provider is down", http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == jwks {
			o.jwksFetches.Add(1)
		}
		mux.ServeHTTP(w, r)
	})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: certKey}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	o.cert, err = x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(o.cert)
	// Tokens asks in parallel: keep that many connections open.
	o.transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, MaxIdleConnsPerHost: 64}
	t.Cleanup(o.transport.CloseIdleConnections)

	// Discovery as a client does it: the provider answers, and says where
	// its token endpoint is.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	config, err := client.Discover(ctx, o.Issuer, o.HTTPClient())
	require.NoError(t, err, "discovery of the test provider")
	o.tokenEndpoint = config.TokenEndpoint
	return o
}

// HTTPClient is a client that trusts CAFile; the clients share their
// connections.
func (o *OIDC) HTTPClient() *http.Client {
	return &http.Client{Transport: o.transport, Timeout: 30 * time.Second}
}

// Certificate is the provider's self-signed certificate (CAFile's), for a
// client to trust, such as a browser (browser.Start).
func (o *OIDC) Certificate() *x509.Certificate { return o.cert }

// SetTokenLifetime sets how long the device tokens Token gets from now on
// live (5 minutes at the start).
func (o *OIDC) SetTokenLifetime(d time.Duration) {
	o.store.mu.Lock()
	defer o.store.mu.Unlock()
	o.store.lifetime = d
}

// keyFile is a Zitadel machine key as Zitadel's console and API hand it
// out (and zitadel/oidc's client.KeyFile reads it).
type keyFile struct {
	Type   string `json:"type"` // "serviceaccount"
	KeyID  string `json:"keyId"`
	Key    string `json:"key"` // PEM, PKCS #1
	UserID string `json:"userId"`
}

// deviceKeys are the RSA 2048 keys of devices' machine keys, made once per
// test binary and shared round-robin: generating one takes about 50 ms, so
// 1,000 devices with keys of their own would take most of a minute. Each
// device still has its own user id and key id, and the provider takes an
// assertion only signed under the device's own key id.
var deviceKeys struct {
	sync.Mutex
	keys []*rsa.PrivateKey
}

const deviceKeyPool = 8

// deviceKey is the n-th device's key.
func deviceKey(n int64) (*rsa.PrivateKey, error) {
	deviceKeys.Lock()
	defer deviceKeys.Unlock()
	i := int(n % deviceKeyPool)
	for len(deviceKeys.keys) <= i {
		k, err := newSigningKey()
		if err != nil {
			return nil, err
		}
		deviceKeys.keys = append(deviceKeys.keys, k.priv)
	}
	return deviceKeys.keys[i], nil
}

// AddDevice registers a machine user for device id, whose tokens carry id
// as the claim device_id, and returns its machine key in Zitadel's JSON
// format ({"type":"serviceaccount","keyId":…,"key":"-----BEGIN RSA PRIVATE
// KEY-----…","userId":…}). User and key ids are numbers, as Zitadel's are.
// The RSA key itself is one of 8 that all devices of the test binary share
// round-robin (generating one takes about 50 ms); the provider still takes
// an assertion only under the device's own user id and key id. A device id
// may be added once.
func (o *OIDC) AddDevice(t testing.TB, id string) []byte {
	t.Helper()
	require.NotEmpty(t, id, "device id")
	n := o.devices.Add(1)
	priv, err := deviceKey(n)
	require.NoError(t, err)
	d := &oidcDevice{id: id, userID: fmt.Sprint(310000000000000000 + n), keyID: fmt.Sprint(320000000000000000 + n),
		pub: &priv.PublicKey}
	o.store.mu.Lock()
	_, dup := o.store.byID[id]
	if !dup {
		o.store.devices[d.userID], o.store.byID[id] = d, d
	}
	o.store.mu.Unlock()
	require.False(t, dup, "device %q added twice", id)
	key := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(priv)})
	b, err := json.Marshal(keyFile{Type: "serviceaccount", KeyID: d.keyID, Key: string(key), UserID: d.userID})
	require.NoError(t, err)
	return b
}

// Token gets an access token for the device whose machine key keyFile is,
// as a device does: it signs an assertion with the key (iss = sub = its
// user id, aud = Issuer) and exchanges it at the token endpoint with the
// JWT profile grant, over HTTPS. The token is a JWT signed with the
// provider's current key: iss Issuer, sub the user id, aud Issuer and
// Audience, exp, iat, nbf, jti, client_id (the user id) and device_id.
func (o *OIDC) Token(t testing.TB, keyFile []byte) string {
	t.Helper()
	tok, err := o.token(t.Context(), keyFile)
	require.NoError(t, err)
	return tok
}

// Tokens is Token for many devices at once, 16 in parallel; the tokens come
// in keyFiles' order.
func (o *OIDC) Tokens(t testing.TB, keyFiles [][]byte) []string {
	t.Helper()
	toks := make([]string, len(keyFiles))
	g, ctx := errgroup.WithContext(t.Context())
	g.SetLimit(16)
	for i, kf := range keyFiles {
		g.Go(func() error {
			var err error
			toks[i], err = o.token(ctx, kf)
			return err
		})
	}
	require.NoError(t, g.Wait())
	return toks
}

func (o *OIDC) token(ctx context.Context, keyFileJSON []byte) (string, error) {
	var kf keyFile
	if err := json.Unmarshal(keyFileJSON, &kf); err != nil {
		return "", fmt.Errorf("reading the key file: %w", err)
	}
	signer, err := client.NewSignerFromPrivateKeyByte([]byte(kf.Key), kf.KeyID)
	if err != nil {
		return "", fmt.Errorf("reading the key of user %s: %w", kf.UserID, err)
	}
	assertion, err := client.SignedJWTProfileAssertion(kf.UserID, []string{o.Issuer}, time.Minute, signer)
	if err != nil {
		return "", fmt.Errorf("signing the assertion of user %s: %w", kf.UserID, err)
	}
	tok, err := client.JWTProfileExchange(ctx, oidc.NewJWTProfileGrantRequest(assertion, oidc.ScopeOpenID), tokenCaller{o})
	if err != nil {
		return "", fmt.Errorf("getting a token for user %s: %w", kf.UserID, err)
	}
	return tok.AccessToken, nil
}

// tokenCaller is client.TokenEndpointCaller: where, and through what, the
// JWT profile grant is asked.
type tokenCaller struct{ o *OIDC }

func (c tokenCaller) TokenEndpoint() string    { return c.o.tokenEndpoint }
func (c tokenCaller) HttpClient() *http.Client { return c.o.HTTPClient() }

// Sign signs claims as a JWT (RS256, typ JWT) with the provider's current
// key and its kid, as the provider signs its tokens: for the tokens Token
// does not make (expired, another aud, a claim missing, …).
func (o *OIDC) Sign(t testing.TB, claims map[string]any) string {
	t.Helper()
	signer, err := op.SignerFromKey(o.store.current())
	require.NoError(t, err)
	jwt, err := crypto.Sign(claims, signer)
	require.NoError(t, err)
	return jwt
}

// Rotate makes a new key the current one and returns its kid; the keys
// before it stay in the JWKS until Retire.
func (o *OIDC) Rotate(t testing.TB) (newKid string) {
	t.Helper()
	key, err := newSigningKey()
	require.NoError(t, err)
	o.store.mu.Lock()
	o.store.keys = append(o.store.keys, key)
	o.store.mu.Unlock()
	return key.kid
}

// Retire removes the key kid from the JWKS: tokens it signed no longer
// verify (once a verifier fetches the JWKS again). The current key cannot be
// retired.
func (o *OIDC) Retire(t testing.TB, kid string) {
	t.Helper()
	o.store.mu.Lock()
	i := slices.IndexFunc(o.store.keys, func(k *signingKey) bool { return k.kid == kid })
	current := i == len(o.store.keys)-1
	if i >= 0 && !current {
		o.store.keys = slices.Delete(o.store.keys, i, i+1)
	}
	o.store.mu.Unlock()
	require.GreaterOrEqual(t, i, 0, "no key %q to retire", kid)
	require.False(t, current, "key %q is the current one: Rotate first", kid)
}

// KeyIDs are the kids of the keys in the JWKS, oldest first: the last is
// the current one.
func (o *OIDC) KeyIDs() []string {
	o.store.mu.RLock()
	defer o.store.mu.RUnlock()
	kids := make([]string, len(o.store.keys))
	for i, k := range o.store.keys {
		kids[i] = k.kid
	}
	return kids
}

// SetDown makes the provider answer every request with 503 Service
// Unavailable (down), or serve again.
func (o *OIDC) SetDown(down bool) { o.down.Store(down) }

// JWKSFetches counts the GET requests to the JWKS endpoint so far.
func (o *OIDC) JWKSFetches() int64 {
	return o.jwksFetches.Load()
}
