package credential

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/model"
)

// The package's own logic under -short; the tests beside these run Sync
// against a real API server.

func TestOptionsFromThePipelineConfig(t *testing.T) {
	set := func(src string) *model.Set {
		objs, problems := load.Bytes("in.yaml", []byte(src), load.Options{})
		require.Empty(t, problems)
		s, err := model.NewSet(objs)
		require.NoError(t, err)
		return s
	}
	opts, err := OptionsFrom(set(""))
	require.NoError(t, err)
	assert.Equal(t, Options{TTL: 24 * time.Hour}, opts, "no PipelineConfig: disabled, 24h")
	head := "apiVersion: solar.opendefense.cloud/v1alpha1\nkind: PipelineConfig\nmetadata: {name: c}\n"
	opts, err = OptionsFrom(set(head + "spec: {agent: {apiserverURL: \"https://api.example.com\", tokenTTL: 2h}}\n"))
	require.NoError(t, err)
	assert.Equal(t, "https://api.example.com", opts.APIServerURL)
	assert.Equal(t, 2*time.Hour, opts.TTL)
	_, err = OptionsFrom(set(head + "spec: {agent: {tokenTTL: soon}}\n"))
	assert.ErrorContains(t, err, "spec.agent.tokenTTL")
	assert.Equal(t, api.ReasonDisabled, Disabled().Reason)
}

func TestFingerprintHidesTheToken(t *testing.T) {
	token := []byte("eyJhbGciOiJSUzI1NiJ9.secret-part.signature")
	fp := Fingerprint(token)
	assert.Regexp(t, `^sha256:[0-9a-f]{12}$`, fp)
	assert.NotContains(t, fp, "secret")
	assert.Equal(t, fp, Fingerprint(token), "stable")
	assert.NotEqual(t, fp, Fingerprint(append(token, 'x')))
}

func TestEqualRules(t *testing.T) {
	rule := func(verbs ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: []string{api.Group}, Resources: []string{"targets"}, ResourceNames: []string{"edge-1"}, Verbs: verbs}
	}
	assert.True(t, equalRules([]rbacv1.PolicyRule{rule("get")}, []rbacv1.PolicyRule{rule("get")}))
	assert.False(t, equalRules([]rbacv1.PolicyRule{rule("get")}, []rbacv1.PolicyRule{rule("get", "update")}), "a widened Role is drift")
	assert.False(t, equalRules([]rbacv1.PolicyRule{rule("get")}, nil))
}

func TestExpires(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{api.AnnotationTokenExpires: at.Format(time.RFC3339)}}}
	assert.Equal(t, at, expires(s))
	assert.True(t, expires(&corev1.Secret{}).IsZero(), "no annotation: expired long ago, replaced first")
}

func TestWantedAndName(t *testing.T) {
	r := &model.Release{}
	assert.False(t, Wanted(r))
	r.Annotations = map[string]string{api.AnnotationTargetCredential: "true"}
	assert.True(t, Wanted(r))
	assert.Equal(t, "solar-agent-edge-1", Name("edge-1"))
	c := failed(errors.New("the API server is gone"))
	assert.Equal(t, api.ReasonMintFailed, c.Reason)
	assert.Contains(t, c.Message, "the API server is gone")
}
