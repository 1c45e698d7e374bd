// Package helmdriver stands in, in tests, for Flux's helm-controller, which
// cannot be built here (its module is not served). It installs with the Helm
// SDK every HelmRelease it finds in a real API server, as helm-controller does.
//
// Reproduced from helm-controller:
//   - the chart is the artifact source-controller serves for spec.chartRef (an
//     OCIRepository), checked against the artifact's digest: the bytes Flux
//     would install, not the registry's;
//   - the Helm release [<targetNamespace>-]<name>, shortened to 53 characters
//     (chain.HelmReleaseName), in targetNamespace or the HelmRelease's
//     namespace, stored in storageNamespace or the HelmRelease's namespace;
//   - values: spec.valuesFrom in order (ConfigMap or Secret, valuesKey default
//     values.yaml, optional), then spec.values merged over them;
//   - install.createNamespace;
//   - an upgrade only when the chart's name or version or the values changed;
//   - the finalizer: a deleted HelmRelease's Helm release is uninstalled, then
//     its finalizer removed.
//
// Not reproduced: waiting for workloads to become ready (no kubelet runs
// here), Helm tests, remediation, rollback, drift detection, dependsOn,
// suspend, status conditions, and intervals (Reconcile runs until nothing
// changes). helm-controller takes ownership of objects another Helm release
// owns; this driver does not, so two levels naming one object fail the test
// instead of fighting over the object.
package helmdriver

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	helmv2 "github.com/fluxcd/helm-controller/api/v2"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/storage/driver"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/renderer/chain"
)

var (
	helmReleaseGVR   = helmv2.GroupVersion.WithResource("helmreleases")
	ociRepositoryGVR = sourcev1.GroupVersion.WithResource("ocirepositories")
)

// Event is one Helm action the driver took.
type Event struct {
	// Action is install, upgrade or uninstall.
	Action string
	// HelmRelease is <namespace>/<name> of the HelmRelease.
	HelmRelease string
	// Release is <namespace>/<name> of the Helm release.
	Release  string
	Revision int
}

func (e Event) String() string {
	return fmt.Sprintf("%s %s (revision %d) for HelmRelease %s", e.Action, e.Release, e.Revision, e.HelmRelease)
}

// Driver installs HelmReleases with the Helm SDK.
type Driver struct {
	kubeconfig string
	dyn        dynamic.Interface
	client     kubernetes.Interface
	http       *http.Client
}

// New returns a driver for the API server of the kubeconfig file.
func New(kubeconfig string) (*Driver, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	// helm-controller's finalizer has no path: the API server warns on each
	// update.
	cfg.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Driver{kubeconfig: kubeconfig, dyn: dyn, client: client, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// Reconcile runs passes over every HelmRelease until one changes nothing, and
// returns the Helm actions taken. A HelmRelease whose OCIRepository has not
// caught up with its spec yet is waited for, up to timeout.
func (d *Driver) Reconcile(ctx context.Context, timeout time.Duration) ([]Event, error) {
	deadline := time.Now().Add(timeout)
	var events []Event
	for {
		done, waiting, err := d.pass(ctx)
		events = append(events, done...)
		if err != nil {
			return events, err
		}
		if len(done) == 0 && len(waiting) == 0 {
			return events, nil
		}
		if time.Now().After(deadline) {
			return events, fmt.Errorf("not settled within %s; waiting for the sources of %s", timeout, strings.Join(waiting, ", "))
		}
		if len(done) == 0 {
			time.Sleep(250 * time.Millisecond)
		}
	}
}

// pass handles every HelmRelease once, in namespace/name order.
func (d *Driver) pass(ctx context.Context) (done []Event, waiting []string, err error) {
	list, err := d.dyn.Resource(helmReleaseGVR).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing HelmReleases: %w", err)
	}
	items := list.Items
	slices.SortFunc(items, func(a, b unstructured.Unstructured) int {
		return strings.Compare(a.GetNamespace()+"/"+a.GetName(), b.GetNamespace()+"/"+b.GetName())
	})
	for i := range items {
		hr := &items[i]
		ev, why, err := d.reconcile(ctx, hr)
		if err != nil {
			return done, waiting, fmt.Errorf("HelmRelease %s/%s: %w", hr.GetNamespace(), hr.GetName(), err)
		}
		if ev != nil {
			done = append(done, *ev)
		}
		if why != "" {
			waiting = append(waiting, fmt.Sprintf("%s/%s (%s)", hr.GetNamespace(), hr.GetName(), why))
		}
	}
	return done, waiting, nil
}

// spec is the part of a HelmRelease the driver reads.
type spec struct {
	ChartRef struct {
		Kind, Name, Namespace string
	} `json:"chartRef"`
	TargetNamespace  string `json:"targetNamespace"`
	StorageNamespace string `json:"storageNamespace"`
	ReleaseName      string `json:"releaseName"`
	Install          struct {
		CreateNamespace bool `json:"createNamespace"`
	} `json:"install"`
	ValuesFrom []struct {
		Kind, Name, ValuesKey, TargetPath string
		Optional                          bool
	} `json:"valuesFrom"`
	Values map[string]any `json:"values"`
}

// reconcile installs, upgrades or uninstalls one HelmRelease's Helm release.
// wait says why it waits for its source, which has not caught up yet.
func (d *Driver) reconcile(ctx context.Context, hr *unstructured.Unstructured) (ev *Event, wait string, err error) {
	var s spec
	raw, _, _ := unstructured.NestedMap(hr.Object, "spec")
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, "", err
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, "", fmt.Errorf("reading spec: %w", err)
	}
	ns := hr.GetNamespace()
	name := s.ReleaseName
	if name == "" {
		name = chain.HelmReleaseName(hr.GetName(), s.TargetNamespace)
	}
	releaseNS := cmp.Or(s.TargetNamespace, ns)
	cfg, err := d.config(releaseNS, cmp.Or(s.StorageNamespace, ns))
	if err != nil {
		return nil, "", err
	}
	ev = &Event{HelmRelease: ns + "/" + hr.GetName(), Release: releaseNS + "/" + name}

	if hr.GetDeletionTimestamp() != nil {
		if !slices.Contains(hr.GetFinalizers(), helmv2.HelmReleaseFinalizer) {
			return nil, "", nil
		}
		last, err := cfg.Releases.Last(name)
		if err == nil {
			if _, err := action.NewUninstall(cfg).Run(name); err != nil {
				return nil, "", fmt.Errorf("uninstalling %s: %w", name, err)
			}
			ev.Action, ev.Revision = "uninstall", last.Version
		} else if !errors.Is(err, driver.ErrReleaseNotFound) {
			return nil, "", err
		}
		hr.SetFinalizers(slices.DeleteFunc(hr.GetFinalizers(), func(f string) bool { return f == helmv2.HelmReleaseFinalizer }))
		if _, err := d.dyn.Resource(helmReleaseGVR).Namespace(ns).Update(ctx, hr, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, "", fmt.Errorf("removing the finalizer: %w", err)
		}
		if ev.Action == "" {
			return nil, "", nil
		}
		return ev, "", nil
	}
	if !slices.Contains(hr.GetFinalizers(), helmv2.HelmReleaseFinalizer) {
		hr.SetFinalizers(append(hr.GetFinalizers(), helmv2.HelmReleaseFinalizer))
		if _, err := d.dyn.Resource(helmReleaseGVR).Namespace(ns).Update(ctx, hr, metav1.UpdateOptions{}); err != nil {
			return nil, "", fmt.Errorf("adding the finalizer: %w", err)
		}
	}

	ch, wait, err := d.chart(ctx, ns, s)
	if err != nil || wait != "" {
		return nil, wait, err
	}
	values, err := d.values(ctx, ns, s)
	if err != nil {
		return nil, "", err
	}
	last, err := cfg.Releases.Last(name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		install := action.NewInstall(cfg)
		install.ReleaseName, install.Namespace = name, releaseNS
		install.CreateNamespace = s.Install.CreateNamespace
		rel, err := install.RunWithContext(ctx, ch, values)
		if err != nil {
			return nil, "", fmt.Errorf("installing %s: %w", name, err)
		}
		ev.Action, ev.Revision = "install", rel.Version
	case err != nil:
		return nil, "", err
	case unchanged(last.Chart, ch, last.Config, values) && last.Info.Status == "deployed":
		return nil, "", nil
	default:
		upgrade := action.NewUpgrade(cfg)
		upgrade.Namespace = releaseNS
		rel, err := upgrade.RunWithContext(ctx, name, ch, values)
		if err != nil {
			return nil, "", fmt.Errorf("upgrading %s: %w", name, err)
		}
		ev.Action, ev.Revision = "upgrade", rel.Version
	}
	return ev, "", nil
}

// config is a Helm action configuration for releases in releaseNS stored in
// storageNS.
func (d *Driver) config(releaseNS, storageNS string) (*action.Configuration, error) {
	getter := genericclioptions.NewConfigFlags(false)
	getter.KubeConfig, getter.Namespace = &d.kubeconfig, &releaseNS
	cfg := &action.Configuration{}
	if err := cfg.Init(getter, storageNS, "secret", func(string, ...any) {}); err != nil {
		return nil, fmt.Errorf("helm configuration: %w", err)
	}
	return cfg, nil
}

// chart fetches the artifact of the HelmRelease's OCIRepository from
// source-controller; wait says why not yet, until the source has caught up
// with its spec and has an artifact.
func (d *Driver) chart(ctx context.Context, ns string, s spec) (ch *chart.Chart, wait string, err error) {
	if s.ChartRef.Kind != sourcev1.OCIRepositoryKind {
		return nil, "", fmt.Errorf("chartRef kind %q: only OCIRepository is driven here", s.ChartRef.Kind)
	}
	repo, err := d.dyn.Resource(ociRepositoryGVR).Namespace(cmp.Or(s.ChartRef.Namespace, ns)).Get(ctx, s.ChartRef.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, "no OCIRepository " + s.ChartRef.Name, nil
	}
	if err != nil {
		return nil, "", err
	}
	observed, _, _ := unstructured.NestedInt64(repo.Object, "status", "observedGeneration")
	url, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "url")
	digest, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "digest")
	if ready, msg := readiness(repo); observed != repo.GetGeneration() || url == "" || !ready {
		return nil, "OCIRepository " + s.ChartRef.Name + ": " + msg, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, "", err
	}
	resp, err := d.http.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("fetching the artifact: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("fetching the artifact %s: %s %v", url, resp.Status, err)
	}
	sum := sha256.Sum256(body)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != digest {
		return nil, "", fmt.Errorf("artifact %s is %s, its status says %s", url, got, digest)
	}
	c, err := loader.LoadArchive(bytes.NewReader(body))
	if err != nil {
		return nil, "", fmt.Errorf("loading the chart: %w", err)
	}
	return c, "", nil
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

// unchanged: the same chart name and version and the same values, as
// helm-controller decides that no upgrade is needed.
func unchanged(last, next *chart.Chart, lastValues, nextValues map[string]any) bool {
	if last.Metadata.Name != next.Metadata.Name || last.Metadata.Version != next.Metadata.Version {
		return false
	}
	if len(lastValues) == 0 && len(nextValues) == 0 {
		return true // Helm stores no values as null
	}
	a, errA := json.Marshal(lastValues)
	b, errB := json.Marshal(nextValues)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}
