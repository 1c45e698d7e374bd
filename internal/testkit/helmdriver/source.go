package helmdriver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// chart fetches the artifact of the HelmRelease's OCIRepository from
// source-controller and returns it with the artifact fingerprint; wait says
// why not yet, until the source has caught up with its spec and has an
// artifact.
func (d *Driver) chart(ctx context.Context, ns string, s spec) (ch *chart.Chart, artifact, wait string, err error) {
	if s.ChartRef.Kind != sourcev1.OCIRepositoryKind {
		return nil, "", "", fmt.Errorf("chartRef kind %q: only OCIRepository is driven here", s.ChartRef.Kind)
	}
	repo, err := d.dyn.Resource(ociRepositoryGVR).Namespace(cmp.Or(s.ChartRef.Namespace, ns)).Get(ctx, s.ChartRef.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, "", "no OCIRepository " + s.ChartRef.Name, nil
	}
	if err != nil {
		return nil, "", "", err
	}
	observed, _, _ := unstructured.NestedInt64(repo.Object, "status", "observedGeneration")
	url, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "url")
	digest, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "digest")
	if ready, msg := readiness(repo); observed != repo.GetGeneration() || url == "" || !ready {
		return nil, "", "OCIRepository " + s.ChartRef.Name + ": " + msg, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", "", err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, "", "", fmt.Errorf("fetching the artifact: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, "", "", fmt.Errorf("fetching the artifact %s: %s %v", url, resp.Status, err)
	}
	sum := sha256.Sum256(body)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
		return nil, "", "", fmt.Errorf("artifact %s is %s, its status says %s", url, got, digest)
	}
	c, err := loader.LoadArchive(bytes.NewReader(body))
	if err != nil {
		return nil, "", "", fmt.Errorf("loading the chart: %w", err)
	}
	return c, artifactOf(repo), "", nil
}

// readiness is the object's Ready condition: whether it is True, and its
// message.
func readiness(obj *unstructured.Unstructured) (bool, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == meta.ReadyCondition {
			return m["status"] == string(metav1.ConditionTrue), fmt.Sprint(m["message"])
		}
	}
	return false, "no Ready condition yet"
}
