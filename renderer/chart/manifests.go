package chart

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/chain"
)

// FirstContact says what a Target's cluster needs once to pull its bootstrap
// chart.
type FirstContact struct {
	// Target and Namespace name the Target.
	Target, Namespace string
	// Host (HOST[:PORT]) and Prefix locate the repositories solar publishes to.
	Host, Prefix string
	// FluxNamespace is where the objects go.
	FluxNamespace string
	// Username and Password of the pull; empty: a marked placeholder.
	Username, Password string
	// CA is the PEM of the registry's CA, if it needs one.
	CA        []byte
	PlainHTTP bool
	// VerifyKeys are PEM public keys: with any, Flux verifies the bootstrap
	// chart and the release charts it names with them (the Secret
	// VerifySecret; two keys while a new one takes over).
	VerifyKeys [][]byte
}

// Placeholder is the user name and password of a pull Secret made without
// credentials, for the operator to replace.
const (
	PlaceholderUsername = "REPLACE-WITH-THE-PULL-USERNAME"
	PlaceholderPassword = "REPLACE-WITH-THE-PULL-PASSWORD"
)

// Manifests are the first-contact objects, from Flux's own API types: the pull
// Secret, the CA Secret (with a CA), the Secret of public keys (with
// VerifyKeys), and the OCIRepository and HelmRelease of
// the bootstrap chart, whose values make the chart's own OCIRepositories use
// the same Secrets. They are unstructured, without server-set fields, ready to
// print for kubectl apply.
func Manifests(fc FirstContact) ([]map[string]any, error) {
	auth := map[string]string{"username": PlaceholderUsername, "password": PlaceholderPassword}
	if fc.Username != "" || fc.Password != "" {
		auth = map[string]string{"username": fc.Username, "password": fc.Password,
			"auth": base64.StdEncoding.EncodeToString([]byte(fc.Username + ":" + fc.Password))}
	}
	dockerConfig, err := json.Marshal(map[string]any{"auths": map[string]any{fc.Host: auth}})
	if err != nil {
		return nil, err
	}
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: fc.FluxNamespace,
			Labels: map[string]string{api.LabelTarget: fc.Target}}
	}
	objs := []runtime.Object{&corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: meta(chain.PullSecret),
		Type:       corev1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{corev1.DockerConfigJsonKey: dockerConfig},
	}}
	repo := &sourcev1.OCIRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.OCIRepositoryKind},
		ObjectMeta: meta(chain.Bootstrap),
		Spec: sourcev1.OCIRepositorySpec{
			URL:           chain.URL(path.Join(fc.Host, fc.Prefix), chain.BootstrapRepository(fc.Namespace, fc.Target)),
			Reference:     &sourcev1.OCIRepositoryRef{SemVer: ">=0.0.0"},
			LayerSelector: LayerSelector(),
			SecretRef:     &metaRef{Name: chain.PullSecret},
			Interval:      interval(),
			Insecure:      fc.PlainHTTP,
		},
	}
	registry := map[string]any{"pullSecret": chain.PullSecret}
	if len(fc.CA) > 0 {
		objs = append(objs, &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: meta(chain.CASecret),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{"ca.crt": fc.CA},
		})
		repo.Spec.CertSecretRef = &metaRef{Name: chain.CASecret}
		registry["certSecret"] = chain.CASecret
	}
	if fc.PlainHTTP {
		registry["insecure"] = true
	}
	if len(fc.VerifyKeys) > 0 {
		objs = append(objs, verifySecret(fc.VerifyKeys, meta(chain.VerifySecret)))
		repo.Spec.Verify = &sourcev1.OCIRepositoryVerification{Provider: "cosign", SecretRef: &metaRef{Name: chain.VerifySecret}}
		registry["verifySecret"] = chain.VerifySecret
	}
	values, err := json.Marshal(map[string]any{"registry": registry})
	if err != nil {
		return nil, err
	}
	policy := ChainPolicy()
	release := &helmv2.HelmRelease{
		TypeMeta:   metav1.TypeMeta{APIVersion: helmv2.GroupVersion.String(), Kind: helmv2.HelmReleaseKind},
		ObjectMeta: meta(chain.Bootstrap),
		Spec: helmv2.HelmReleaseSpec{
			Interval:       interval(),
			ChartRef:       &helmv2.CrossNamespaceSourceReference{Kind: sourcev1.OCIRepositoryKind, Name: chain.Bootstrap},
			Install:        policy.Install,
			Upgrade:        policy.Upgrade,
			Test:           policy.Test,
			DriftDetection: policy.DriftDetection,
			Values:         &apiextensionsv1.JSON{Raw: values},
		},
	}
	return unstructuredList(append(objs, repo, release))
}

// unstructuredList converts objs for printing: without the fields the API
// server sets, which are not for the user to apply.
func unstructuredList(objs []runtime.Object) ([]map[string]any, error) {
	out := make([]map[string]any, len(objs))
	for i, o := range objs {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			return nil, fmt.Errorf("converting %T: %w", o, err)
		}
		delete(u, "status")
		if m, ok := u["metadata"].(map[string]any); ok {
			delete(m, "creationTimestamp")
		}
		out[i] = u
	}
	return out, nil
}

// verifySecret is the Secret of public keys Flux verifies with: one
// key-N.pub entry per key, in order (source-controller tries each .pub
// entry).
func verifySecret(keys [][]byte, m metav1.ObjectMeta) *corev1.Secret {
	data := map[string][]byte{}
	for i, k := range keys {
		data[fmt.Sprintf("key-%d.pub", i+1)] = k
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: m,
		Type:       corev1.SecretTypeOpaque,
		Data:       data,
	}
}

type metaRef = meta.LocalObjectReference
