package credential

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/model"
)

// PendingToken stands in for the token a sync would mint, in the kubeconfig
// of a Pending credential (a dry run): not a JWT, so never a token the API
// server accepts.
const PendingToken = "pending-token-minted-at-publish"

// Options configure minting.
type Options struct {
	// APIServerURL is where agents reach the SolAr API server
	// (PipelineConfig.agent.apiserverURL); empty disables credentials.
	APIServerURL string
	// TTL is the requested token lifetime (PipelineConfig.agent.tokenTTL);
	// 0 means DefaultTTL.
	TTL time.Duration
	// RotateBefore: a token with less lifetime left is replaced. Default TTL/3.
	RotateBefore time.Duration
	// Now is the clock; tests move it instead of waiting.
	Now func() time.Time
	// ReadOnly (a dry run) writes nothing: a Target whose token is usable
	// keeps it; one that would get a new token is Pending.
	ReadOnly bool
	// Cache, when set, is where a sync reads what it checks (the
	// controller's): it writes only what changed, and an unchanged
	// Target costs no request. Nil: the API server is read.
	Cache *Cache
}

// Credential is a Target's agent credential. Only the condition fields are
// ever printed; Kubeconfig holds the token.
type Credential struct {
	Status  metav1.ConditionStatus `json:"status"`
	Reason  string                 `json:"reason"`
	Message string                 `json:"message"`
	// Kubeconfig for the agent (server, CA, token) when Issued.
	Kubeconfig []byte `json:"-"`
	// Renew, when Issued, is when a sync replaces the token (RotateBefore
	// ahead of its expiry): a controller syncs again by then.
	Renew time.Time `json:"-"`
}

// Wanted reports whether a Target gets an agent credential: one of its
// releases is annotated target-credential: "true".
func Wanted(r *model.Release) bool { return r.Annotations[api.AnnotationTargetCredential] == "true" }

// Minter mints credentials in one API server.
type Minter struct {
	client kubernetes.Interface
	dyn    dynamic.Interface
	ca     []byte
	opts   Options
}

// NewMinter connects with the pipeline's own identity.
func NewMinter(cfg *rest.Config, opts Options) (*Minter, error) {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return nil, fmt.Errorf("reading the API server CA: %w", err)
		}
	}
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.RotateBefore <= 0 {
		opts.RotateBefore = opts.TTL / 3
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Minter{client: client, dyn: dyn, ca: ca, opts: opts}, nil
}

// Name is the ServiceAccount, Role and RoleBinding name of a Target's agent.
func Name(target string) string { return "solar-agent-" + target }

// Sync ensures the Target's credential and writes its condition to the
// Target's status when the Target exists in the API server. A failure is a
// MintFailed credential, not an error: the other Targets go on.
func (m *Minter) Sync(ctx context.Context, t *model.Target) Credential {
	var cred Credential
	switch {
	case m.opts.APIServerURL == "":
		cred = Credential{Status: metav1.ConditionFalse, Reason: api.ReasonDisabled, Message: disabledMessage}
	case t.Annotations[api.AnnotationAgentCredential] == "revoked" && m.opts.ReadOnly:
		// A dry run writes nothing, ever: it says what a sync would do.
		return Credential{Status: metav1.ConditionFalse, Reason: api.ReasonRevoked,
			Message: "dry run: revoked by the annotation " + api.AnnotationAgentCredential + "; a sync would delete its token Secrets"}
	case t.Annotations[api.AnnotationAgentCredential] == "revoked":
		if err := m.revoke(ctx, t); err != nil {
			cred = failed(fmt.Errorf("revoking: %w", err))
		} else {
			cred = Credential{Status: metav1.ConditionFalse, Reason: api.ReasonRevoked,
				Message: "revoked by the annotation " + api.AnnotationAgentCredential + ": its token Secrets are deleted, no new token is minted"}
		}
	case m.opts.ReadOnly:
		return m.peek(ctx, t)
	default:
		var err error
		if cred, err = m.issue(ctx, t); err != nil {
			cred = failed(err)
		}
	}
	if m.opts.ReadOnly {
		return cred
	}
	if err := m.writeCondition(ctx, t, cred); err != nil && cred.Reason != api.ReasonMintFailed {
		cred = failed(fmt.Errorf("writing the condition to Target %s/%s: %w", t.Namespace, t.Name, err))
	}
	return cred
}

const disabledMessage = "PipelineConfig spec.agent.apiserverURL is not set: agents get no credential"

func failed(err error) Credential {
	return Credential{Status: metav1.ConditionFalse, Reason: api.ReasonMintFailed, Message: err.Error()}
}

// peek is Sync without writing: the credential a sync would leave, when it
// would keep the current token.
func (m *Minter) peek(ctx context.Context, t *model.Target) Credential {
	secrets, err := m.tokenSecrets(ctx, t)
	if err != nil {
		return failed(err)
	}
	now := m.opts.Now()
	for _, s := range slices.Backward(secrets) {
		if len(s.Data["token"]) > 0 && expires(&s).Sub(now) >= m.opts.RotateBefore {
			cred, err := m.issued(t, &s)
			if err != nil {
				return failed(err)
			}
			return cred
		}
	}
	// The agent chart will carry a new token: a kubeconfig with PendingToken
	// stands in, so the plan shows that chart changing and a diff shows the
	// token rotating (a kubeconfig without a token would show it deleted).
	kubeconfig, err := m.kubeconfig(t, PendingToken)
	if err != nil {
		return failed(err)
	}
	return Credential{Status: metav1.ConditionUnknown, Reason: api.ReasonPending,
		Message: "dry run: a new token would be minted", Kubeconfig: kubeconfig}
}

// issue ensures the RBAC objects and TargetReport, and a token with enough
// lifetime left.
func (m *Minter) issue(ctx context.Context, t *model.Target) (Credential, error) {
	repaired, err := m.ensureRBAC(ctx, t)
	if err != nil {
		return Credential{}, err
	}
	if err := m.ensureReport(ctx, t); err != nil {
		return Credential{}, err
	}
	secret, err := m.ensureToken(ctx, t)
	if err != nil {
		return Credential{}, err
	}
	cred, err := m.issued(t, secret)
	if len(repaired) > 0 {
		cred.Message += "; repaired: " + strings.Join(repaired, "; ")
	}
	return cred, err
}

// issued is the credential of a token Secret.
func (m *Minter) issued(t *model.Target, secret *corev1.Secret) (Credential, error) {
	token := secret.Data["token"]
	kubeconfig, err := m.kubeconfig(t, string(token))
	if err != nil {
		return Credential{}, err
	}
	return Credential{
		Status: metav1.ConditionTrue, Reason: api.ReasonIssued,
		Message: fmt.Sprintf("token <redacted> (fingerprint %s) in Secret %s/%s, expires %s",
			Fingerprint(token), secret.Namespace, secret.Name, secret.Annotations[api.AnnotationTokenExpires]),
		Kubeconfig: kubeconfig,
		Renew:      expires(secret).Add(-m.opts.RotateBefore),
	}, nil
}

// Fingerprint identifies a token in messages without revealing it.
func Fingerprint(token []byte) string {
	sum := sha256.Sum256(token)
	return "sha256:" + hex.EncodeToString(sum[:])[:12]
}

func equalRules(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool {
		return slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) &&
			slices.Equal(x.ResourceNames, y.ResourceNames) && slices.Equal(x.Verbs, y.Verbs) &&
			slices.Equal(x.NonResourceURLs, y.NonResourceURLs)
	})
}

// ensureReport creates the Target's empty TargetReport if it is missing.
func (m *Minter) ensureReport(ctx context.Context, t *model.Target) error {
	rd := m.reads()
	if exists, err := rd.report(ctx, t.Namespace, t.Name); err != nil || exists {
		return err
	}
	report := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": api.APIVersion, "kind": api.KindTargetReport,
		"metadata": map[string]any{"name": t.Name, "namespace": t.Namespace},
		"spec":     map[string]any{},
	}}
	created, err := m.dyn.Resource(kube.TargetReportGVR).Namespace(t.Namespace).Create(ctx, report, metav1.CreateOptions{})
	switch {
	case err == nil:
		rd.wrote(created)
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("creating TargetReport %s/%s: %w", t.Namespace, t.Name, err)
	}
	return nil
}

// tokenSecrets lists the Target's token Secrets, newest expiry last.
func (m *Minter) tokenSecrets(ctx context.Context, t *model.Target) ([]corev1.Secret, error) {
	items, err := m.reads().secrets(ctx, t.Namespace, t.Name)
	if err != nil {
		return nil, fmt.Errorf("listing the token Secrets of %s/%s: %w", t.Namespace, t.Name, err)
	}
	slices.SortFunc(items, func(a, b corev1.Secret) int {
		return cmp.Or(expires(&a).Compare(expires(&b)), cmp.Compare(a.Name, b.Name))
	})
	return items, nil
}

func expires(s *corev1.Secret) time.Time {
	t, _ := time.Parse(time.RFC3339, s.Annotations[api.AnnotationTokenExpires])
	return t
}

// ensureToken returns a token Secret with at least RotateBefore left, minting
// one when needed. Expired Secrets are deleted; the one being replaced stays
// until it expires, so an agent keeps working until its new chart arrives.
func (m *Minter) ensureToken(ctx context.Context, t *model.Target) (*corev1.Secret, error) {
	secrets, err := m.tokenSecrets(ctx, t)
	if err != nil {
		return nil, err
	}
	now := m.opts.Now()
	var current *corev1.Secret
	for i := range secrets {
		s := &secrets[i]
		switch {
		case !expires(s).After(now):
			if err := m.deleteSecret(ctx, s); err != nil {
				return nil, err
			}
		case len(s.Data["token"]) > 0:
			current = s
		}
	}
	if current != nil && expires(current).Sub(now) >= m.opts.RotateBefore {
		return current, nil
	}
	return m.mint(ctx, t)
}

func (m *Minter) deleteSecret(ctx context.Context, s *corev1.Secret) error {
	err := m.client.CoreV1().Secrets(s.Namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	m.reads().deleted(s)
	return nil
}

// mint creates a Secret, a token bound to it, and stores the token in it.
func (m *Minter) mint(ctx context.Context, t *model.Target) (*corev1.Secret, error) {
	secrets := m.client.CoreV1().Secrets(t.Namespace)
	secret, err := secrets.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{GenerateName: Name(t.Name) + "-token-", Namespace: t.Namespace,
			Labels: map[string]string{api.LabelAgentTokenFor: t.Name}},
		Type: corev1.SecretTypeOpaque,
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating the token Secret: %w", err)
	}
	m.reads().wrote(secret)
	seconds := int64(m.opts.TTL / time.Second)
	tr, err := m.client.CoreV1().ServiceAccounts(t.Namespace).CreateToken(ctx, Name(t.Name), &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &seconds,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: secret.Name, UID: secret.UID},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", t.Namespace, Name(t.Name), err),
			m.deleteSecret(ctx, secret))
	}
	// The granted expiry may differ from the requested one.
	secret.Annotations = map[string]string{api.AnnotationTokenExpires: tr.Status.ExpirationTimestamp.UTC().Format(time.RFC3339)}
	secret.Data = map[string][]byte{"token": []byte(tr.Status.Token)}
	updated, err := secrets.Update(ctx, secret, metav1.UpdateOptions{})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("storing the token in Secret %s/%s: %w", secret.Namespace, secret.Name, err),
			m.deleteSecret(ctx, secret))
	}
	m.reads().wrote(updated)
	return updated, nil
}

// revoke deletes every token Secret of the Target: the tokens bound to them
// stop working as soon as the API server's token cache forgets them (seconds).
func (m *Minter) revoke(ctx context.Context, t *model.Target) error {
	secrets, err := m.tokenSecrets(ctx, t)
	if err != nil {
		return err
	}
	for i := range secrets {
		if err := m.deleteSecret(ctx, &secrets[i]); err != nil {
			return err
		}
	}
	return nil
}
