package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// The resources of the Flux objects solar prints and charts hold.
var (
	OCIRepositoryGVR = sourcev1.GroupVersion.WithResource("ocirepositories")
	HelmReleaseGVR   = helmv2.GroupVersion.WithResource("helmreleases")
	SecretGVR        = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// Flux drives the Flux objects of namespace NS in the API server: what a
// cluster's Flux would be given, and what source-controller makes of it.
type Flux struct {
	T   testing.TB
	Dyn dynamic.Interface
	NS  string
}

// Apply creates the Secrets, OCIRepositories and HelmReleases of a YAML
// stream; it returns the other documents.
func (f *Flux) Apply(stream string) []map[string]any {
	f.T.Helper()
	var rest []map[string]any
	for _, doc := range strings.Split(stream, "\n---") {
		var obj map[string]any
		require.NoError(f.T, yaml.Unmarshal([]byte(doc), &obj))
		if obj == nil {
			continue
		}
		u := &unstructured.Unstructured{Object: obj}
		var gvr schema.GroupVersionResource
		switch u.GetKind() {
		case "Secret":
			gvr = SecretGVR
		case "OCIRepository":
			gvr = OCIRepositoryGVR
		case "HelmRelease":
			gvr = HelmReleaseGVR
		default:
			rest = append(rest, obj)
			continue
		}
		u.SetNamespace(f.NS)
		_, err := f.Dyn.Resource(gvr).Namespace(f.NS).Create(context.Background(), u, metav1.CreateOptions{})
		require.NoError(f.T, err, "creating %s %s", u.GetKind(), u.GetName())
	}
	return rest
}

// Ready waits until the OCIRepository is Ready and handled the given
// reconcile request (if any), and returns its artifact.
func (f *Flux) Ready(name, requested string) map[string]any {
	f.T.Helper()
	var last string
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		obj, err := f.Dyn.Resource(OCIRepositoryGVR).Namespace(f.NS).Get(context.Background(), name, metav1.GetOptions{})
		require.NoError(f.T, err)
		handled, _, _ := unstructured.NestedString(obj.Object, "status", "lastHandledReconcileAt")
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == meta.ReadyCondition {
				last = fmt.Sprintf("%v %v: %v", m["status"], m["reason"], m["message"])
				artifact, _, _ := unstructured.NestedMap(obj.Object, "status", "artifact")
				if m["status"] == string(metav1.ConditionTrue) && artifact != nil && (requested == "" || handled == requested) {
					return artifact
				}
			}
		}
		time.Sleep(250 * time.Millisecond)
	}
	f.T.Fatalf("OCIRepository %s/%s not Ready within 90s; last Ready condition: %s", f.NS, name, last)
	return nil
}

// Reconcile asks source-controller to reconcile now, as flux reconcile does.
func (f *Flux) Reconcile(name string) string {
	f.T.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token)
	_, err := f.Dyn.Resource(OCIRepositoryGVR).Namespace(f.NS).Patch(context.Background(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{})
	require.NoError(f.T, err)
	return token
}
