package credential

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/renderer/model"
)

// kubeconfig is what the agent release carries: the API server for agents,
// its CA, the token.
func (m *Minter) kubeconfig(t *model.Target, token string) ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["solar"] = &clientcmdapi.Cluster{Server: m.opts.APIServerURL, CertificateAuthorityData: m.ca}
	cfg.AuthInfos[Name(t.Name)] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["solar"] = &clientcmdapi.Context{Cluster: "solar", AuthInfo: Name(t.Name), Namespace: t.Namespace}
	cfg.CurrentContext = "solar"
	return clientcmd.Write(*cfg)
}

// writeCondition sets AgentCredentialReady on the Target's status when the
// Target exists in the API server, and only when it changed. A Target read
// from a Cache that is behind (the write conflicts) is read again from the
// API server.
func (m *Minter) writeCondition(ctx context.Context, t *model.Target, cred Credential) error {
	obj, err := m.reads().target(ctx, t.Namespace, t.Name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	err = m.updateCondition(ctx, obj.DeepCopy(), cred)
	if apierrors.IsConflict(err) && m.opts.Cache != nil {
		if obj, err = (apiReads{m}).target(ctx, t.Namespace, t.Name); apierrors.IsNotFound(err) {
			return nil
		} else if err != nil {
			return err
		}
		err = m.updateCondition(ctx, obj, cred)
	}
	return err
}

// updateCondition writes obj's status with the credential's condition,
// when it changes it.
func (m *Minter) updateCondition(ctx context.Context, obj *unstructured.Unstructured, cred Credential) error {
	var status struct {
		Conditions []metav1.Condition `json:"conditions,omitempty"`
	}
	if raw, ok := obj.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &status); err != nil {
			return fmt.Errorf("reading status: %w", err)
		}
	}
	changed := apimeta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: api.ConditionAgentCredentialReady, Status: cred.Status, Reason: cred.Reason, Message: cred.Message,
		ObservedGeneration: obj.GetGeneration(), LastTransitionTime: metav1.NewTime(m.opts.Now()),
	})
	if !changed {
		return nil
	}
	raw, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&status)
	if err != nil {
		return err
	}
	// Only the conditions: the rest of the status (the controller's
	// bootstrap chart, observedGeneration) stays as it is.
	if err := unstructured.SetNestedField(obj.Object, raw["conditions"], "status", "conditions"); err != nil {
		return err
	}
	_, err = m.dyn.Resource(kube.TargetGVR).Namespace(obj.GetNamespace()).UpdateStatus(ctx, obj, metav1.UpdateOptions{})
	return err
}
