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
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// loaded is a chart as helm-controller loads it from its source: its
// version suffixed with the artifact's digest, which digest is.
type loaded struct {
	chart  *chart.Chart
	digest string
}

// chart fetches the artifact of the HelmRelease's OCIRepository from
// source-controller and returns it with the artifact fingerprint; wait says
// why not yet, until the source has caught up with its spec and has an
// artifact.
func (d *Driver) chart(ctx context.Context, ns string, s spec) (ch loaded, artifact, wait string, err error) {
	if s.ChartRef.Kind != sourcev1.OCIRepositoryKind {
		return ch, "", "", fmt.Errorf("chartRef kind %q: only OCIRepository is driven here", s.ChartRef.Kind)
	}
	repo, err := d.dyn.Resource(ociRepositoryGVR).Namespace(cmp.Or(s.ChartRef.Namespace, ns)).Get(ctx, s.ChartRef.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ch, "", "no OCIRepository " + s.ChartRef.Name, nil
	}
	if err != nil {
		return ch, "", "", err
	}
	observed, _, _ := unstructured.NestedInt64(repo.Object, "status", "observedGeneration")
	url, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "url")
	digest, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "digest")
	if ready, msg := readiness(repo); observed != repo.GetGeneration() || url == "" || !ready {
		return ch, "", "OCIRepository " + s.ChartRef.Name + ": " + msg, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return ch, "", "", err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return ch, "", "", fmt.Errorf("fetching the artifact: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return ch, "", "", fmt.Errorf("fetching the artifact %s: %s %v", url, resp.Status, err)
	}
	sum := sha256.Sum256(body)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
		return ch, "", "", fmt.Errorf("artifact %s is %s, its status says %s", url, got, digest)
	}
	c, err := loader.LoadArchive(bytes.NewReader(body))
	if err != nil {
		return ch, "", "", fmt.Errorf("loading the chart: %w", err)
	}
	revision, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "revision")
	revDigest, err := withSourceRevision(c, revision)
	if err != nil {
		return ch, "", "", &mutateError{err}
	}
	return loaded{chart: c, digest: revDigest}, artifactOf(repo), "", nil
}

// mutateError is a chart version that does not fit its source's revision:
// Ready=False with reason ChartMutateError.
type mutateError struct{ error }

// withSourceRevision appends the first 12 hex digits of an OCIRepository's
// artifact digest to the chart's version as semver build metadata, as
// helm-controller does to every chart it loads through an OCIRepository
// (internal/controller/helmrelease_controller.go of v1.6.3,
// mutateChartWithSourceRevision and extractDigestSubString, lines 904-1008):
// the revision is <tag>@<algorithm>:<hex>; when the tag is a semver version
// (an OCI tag's '_' read as '+') it must equal the chart's version, and a
// digest shorter than 12 digits is an invalid revision. A chart version that
// is not semver is an error too. It returns the digest (<algorithm>:<hex>).
func withSourceRevision(c *chart.Chart, revision string) (string, error) {
	ver, err := semver.NewVersion(c.Metadata.Version)
	if err != nil {
		return "", fmt.Errorf("invalid chart version %s", c.Metadata.Version)
	}
	tag, dgst, found := strings.Cut(revision, "@")
	if !found {
		if _, err := semver.NewVersion(revision); err == nil {
			return "", fmt.Errorf("artifact revision %s does not match chart version %s", revision, c.Metadata.Version)
		}
		tag, dgst = "", revision
	}
	if tagVer, err := semver.NewVersion(strings.ReplaceAll(tag, "_", "+")); found && err == nil && !tagVer.Equal(ver) {
		return "", fmt.Errorf("artifact revision %s does not match chart version %s", tag, c.Metadata.Version)
	}
	_, hex, ok := strings.Cut(dgst, ":")
	if !ok || strings.Contains(hex, ":") || len(hex) < 12 {
		return "", fmt.Errorf("invalid artifact revision %s", dgst)
	}
	v, err := ver.SetMetadata(hex[:12])
	if err != nil {
		return "", err
	}
	c.Metadata.Version = v.String()
	return dgst, nil
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
