package callout

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/zitadel/oidc/v3/pkg/client"
	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"
)

// KeyFile is a Zitadel machine key, as Zitadel's console and API hand it
// out: the device's user id, the key's id and its private key (PEM).
type KeyFile struct {
	Type   string `json:"type"`
	KeyID  string `json:"keyId"`
	Key    string `json:"key"`
	UserID string `json:"userId"`
}

// DeviceToken is what a device's identity setup does: the JWT profile grant
// (RFC 7523) of its machine key at the issuer's token endpoint (found by
// discovery), with scopes (Zitadel adds the project's audience for
// "urn:zitadel:iam:org:project:id:<id>:aud"). It returns the access token,
// the device's NATS token.
func DeviceToken(ctx context.Context, issuer string, hc *http.Client, keyFile []byte, scopes []string) (string, error) {
	var kf KeyFile
	if err := json.Unmarshal(keyFile, &kf); err != nil {
		return "", fmt.Errorf("the key file: %w", err)
	}
	if kf.UserID == "" || kf.KeyID == "" || kf.Key == "" {
		return "", fmt.Errorf("the key file has no userId, keyId or key")
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, hc), issuer)
	if err != nil {
		return "", fmt.Errorf("discovery of %s: %w", issuer, err)
	}
	signer, err := client.NewSignerFromPrivateKeyByte([]byte(kf.Key), kf.KeyID)
	if err != nil {
		return "", fmt.Errorf("the key of user %s: %w", kf.UserID, err)
	}
	assertion, err := client.SignedJWTProfileAssertion(kf.UserID, []string{issuer}, time.Minute, signer)
	if err != nil {
		return "", err
	}
	tok, err := client.JWTProfileExchange(ctx, zoidc.NewJWTProfileGrantRequest(assertion, append([]string{zoidc.ScopeOpenID}, scopes...)...), endpoint{p.Endpoint().TokenURL, hc})
	if err != nil {
		return "", fmt.Errorf("the JWT profile grant for user %s: %w", kf.UserID, err)
	}
	return tok.AccessToken, nil
}

// endpoint is client.TokenEndpointCaller.
type endpoint struct {
	url string
	hc  *http.Client
}

func (e endpoint) TokenEndpoint() string    { return e.url }
func (e endpoint) HttpClient() *http.Client { return e.hc }
