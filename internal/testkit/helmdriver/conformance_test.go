package helmdriver_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/solar-pipeline/solar/internal/testkit/helmdriver"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// record runs the real helm-controller instead of the stand-in and writes
// what it did into testdata/helm-controller (see TestConformance).
var record = flag.Bool("record", false, "run the helm-controller binary $SOLAR_HELM_CONTROLLER and write its traces to testdata/helm-controller")

// traceDir holds the traces recorded from the real helm-controller.
const traceDir = "testdata/helm-controller"

// trace is what a controller wrote in one scenario, step by step.
type trace struct {
	// Recorded says which helm-controller wrote it, and how it was built.
	Recorded string  `json:"recorded,omitempty"`
	Steps    []state `json:"steps"`
}

// state is what a controller left after one step, once it settled: the
// HelmRelease's status (nil once the HelmRelease is gone) and the Helm
// release Secrets in its storage namespace. Times, the digests of Helm's
// release objects and of the values are left out: they differ between any
// two runs. A chart artifact's digest is written <digest of TAG> (its first
// 12 hex digits) and <artifact of TAG> (whole), so that a run compares with
// another.
type state struct {
	Step        string       `json:"step"`
	HelmRelease *hrStatus    `json:"helmRelease"`
	Secrets     []helmSecret `json:"helmSecrets"`
	// Seen are the Ready condition's status/reason in the order they were
	// polled while the step ran (every 100 ms): what an observer may see.
	// It depends on timing, so it is recorded but not compared.
	Seen []string `json:"seen,omitempty"`
}

type hrStatus struct {
	Conditions                  []condition `json:"conditions"`
	History                     []snapshot  `json:"history,omitempty"`
	LastAttemptedRevision       string      `json:"lastAttemptedRevision,omitempty"`
	LastAttemptedRevisionDigest string      `json:"lastAttemptedRevisionDigest,omitempty"`
	LastAttemptedReleaseAction  string      `json:"lastAttemptedReleaseAction,omitempty"`
	Failures                    int64       `json:"failures,omitempty"`
	InstallFailures             int64       `json:"installFailures,omitempty"`
	UpgradeFailures             int64       `json:"upgradeFailures,omitempty"`
	// Current: status.observedGeneration is metadata.generation.
	Current bool `json:"current"`
}

type condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type snapshot struct {
	Name         string `json:"name"`
	Namespace    string `json:"namespace"`
	Version      int64  `json:"version"`
	Status       string `json:"status"`
	ChartName    string `json:"chartName"`
	ChartVersion string `json:"chartVersion"`
	AppVersion   string `json:"appVersion,omitempty"`
	Action       string `json:"action,omitempty"`
	OCIDigest    string `json:"ociDigest,omitempty"`
	// TestHooks are the Helm test hooks run, by name ({} when the chart
	// has none; absent before tests ran).
	TestHooks *map[string]any `json:"testHooks,omitempty"`
}

type helmSecret struct {
	Name    string `json:"name"`
	Status  string `json:"status"`
	Version string `json:"version"`
}

// TestConformance replays, against the helm-controller stand-in, the
// scenarios recorded from the real helm-controller (scenarios_test.go), and
// asserts that the stand-in leaves what the real one left after each step.
//
// To record again (when helm-controller moves), run
// scripts/record-helm-controller.sh with a checkout of helm-controller (its
// module is not served by the proxy, so CI cannot build it): it builds it and
// runs this test with -record and $SOLAR_HELM_CONTROLLER; the diff of
// testdata/helm-controller is then what changed.
func TestConformance(t *testing.T) {
	bin := os.Getenv("SOLAR_HELM_CONTROLLER")
	if *record && bin == "" {
		t.Fatal("-record runs the real helm-controller: set SOLAR_HELM_CONTROLLER to its binary")
	}
	env := startConformance(t, bin)
	for _, sc := range scenarios() {
		t.Run(sc.name, func(t *testing.T) {
			got := env.run(t, sc)
			file := filepath.Join(traceDir, sc.name+".json")
			if *record {
				got.Recorded = recordedBy()
				b, err := json.MarshalIndent(got, "", "  ")
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(file, append(b, '\n'), 0o644))
				return
			}
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			var want trace
			require.NoError(t, json.Unmarshal(b, &want))
			require.Len(t, got.Steps, len(want.Steps))
			for i := range want.Steps {
				w, g := want.Steps[i], got.Steps[i]
				w.Seen, g.Seen = nil, nil
				assert.Equal(t, w, g, "step %s: the stand-in leaves what helm-controller left (%s); seen: %v", w.Step, want.Recorded, got.Steps[i].Seen)
			}
		})
	}
}

// recordedBy names the helm-controller recorded, from
// $SOLAR_HELM_CONTROLLER_VERSION (how it was built).
func recordedBy() string {
	return "helm-controller " + os.Getenv("SOLAR_HELM_CONTROLLER_VERSION") + ", recorded " + time.Now().UTC().Format(time.DateOnly)
}

// conformance is one cluster with source-controller, a registry holding the
// scenarios' charts, and the controller under test.
type conformance struct {
	dyn dynamic.Interface
	api *testenv.APIServer
	reg *testenv.Registry
}

func startConformance(t *testing.T, real string) *conformance {
	if testing.Short() {
		t.Skip("-short: runs a registry, a Kubernetes cluster and source-controller")
	}
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{TLS: true})
	api := testenv.StartCluster(t)
	testenv.StartSourceController(t, api, reg.CAFile)
	if real != "" {
		testenv.StartHelmController(t, api, real)
	} else {
		drv, err := helmdriver.New(api.Kubeconfig, helmdriver.Options{})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		drv.Start(ctx)
	}
	for _, c := range []struct{ dir, name, version string }{
		{appChart, "app", "0.1.0"}, {appChart, "app", "0.2.0"}, {"testdata/labelled", "labelled", "0.1.0"},
	} {
		testenv.PushChart(t, reg, c.dir, "charts", c.name, c.version)
	}
	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	return &conformance{dyn: dyn, api: api, reg: reg}
}

// appChart is the chain test's application chart: a Deployment that becomes
// ready on the test cluster, and a ConfigMap of its values.
const appChart = "../../../cmd/solar/chaintest/testdata/app"

// run runs the steps of sc in a namespace of its own and returns what the
// controller left after each.
func (c *conformance) run(t *testing.T, sc scenario) trace {
	c.api.CreateNamespaces(t, sc.name)
	_, err := c.api.Client.CoreV1().Secrets(sc.name).Create(context.Background(), testenv.PullSecret(c.reg, sc.name, "pull"), metav1.CreateOptions{})
	require.NoError(t, err)
	s := &session{t: t, c: c, ns: sc.name, artifacts: map[string]string{}}
	var out trace
	for _, st := range sc.steps {
		st.do(s)
		out.Steps = append(out.Steps, s.await(st.name, st.until))
	}
	return out
}

// session is one scenario's namespace.
type session struct {
	t  *testing.T
	c  *conformance
	ns string
	// artifacts are the hex digests of the chart artifacts the
	// OCIRepository had, by tag.
	artifacts map[string]string
}

// await polls the HelmRelease until until holds for what the controller
// left and that stays the same for a second, and returns it.
func (s *session) await(step string, until func(*unstructured.Unstructured) bool) state {
	s.t.Helper()
	deadline := time.Now().Add(6 * time.Minute)
	var seen []string
	var last state
	stable := 0
	for {
		hr := s.helmRelease()
		s.noteArtifact()
		if r := readyOf(hr); len(seen) == 0 || seen[len(seen)-1] != r {
			seen = append(seen, r)
		}
		if until(hr) {
			cur := s.state(step, hr)
			if stable > 0 && equalJSON(cur, last) {
				stable++
			} else {
				stable = 1
			}
			last = cur
			if stable >= 10 {
				last.Seen = seen
				return last
			}
		} else {
			stable = 0
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("step %s: not done within 6m; the HelmRelease: %v", step, hr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// helmRelease is the scenario's HelmRelease, nil when it is gone.
func (s *session) helmRelease() *unstructured.Unstructured {
	hr, err := s.c.dyn.Resource(testenv.HelmReleaseGVR).Namespace(s.ns).Get(context.Background(), "app", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(s.t, err)
	return hr
}

func readyOf(hr *unstructured.Unstructured) string {
	if hr == nil {
		return "gone"
	}
	for _, c := range conditionsOf(hr) {
		if c.Type == "Ready" {
			return c.Status + "/" + c.Reason
		}
	}
	return "none"
}

// state is what the controller left: hr's status and the Helm Secrets,
// with each artifact's digest written <digest of TAG> (its first 12 hex
// digits) and <artifact of TAG> (whole).
func (s *session) state(step string, hr *unstructured.Unstructured) state {
	st := state{Step: step, Secrets: s.helmSecrets()}
	if hr != nil {
		var h hrStatus
		b, err := json.Marshal(hr.Object["status"])
		require.NoError(s.t, err)
		require.NoError(s.t, json.Unmarshal(b, &h))
		h.Conditions = conditionsOf(hr)
		gen, _, _ := unstructured.NestedInt64(hr.Object, "status", "observedGeneration")
		h.Current = gen == hr.GetGeneration()
		st.HelmRelease = &h
	}
	b, err := json.Marshal(st)
	require.NoError(s.t, err)
	text := string(b)
	for tag, hex := range s.artifacts {
		text = strings.ReplaceAll(text, hex, "<artifact of "+tag+">")
		text = strings.ReplaceAll(text, hex[:12], "<digest of "+tag+">")
	}
	var out state
	require.NoError(s.t, json.Unmarshal([]byte(text), &out))
	return out
}

// noteArtifact notes the hex of the OCIRepository's artifact revision
// (<tag>@sha256:<hex>, the chart's manifest digest) by its tag.
func (s *session) noteArtifact() {
	repo, err := s.c.dyn.Resource(testenv.OCIRepositoryGVR).Namespace(s.ns).Get(context.Background(), "app", metav1.GetOptions{})
	if err != nil {
		return
	}
	rev, _, _ := unstructured.NestedString(repo.Object, "status", "artifact", "revision")
	tag, hex, _ := strings.Cut(rev, "@sha256:")
	if len(hex) >= 12 {
		s.artifacts[tag] = hex
	}
}

func conditionsOf(hr *unstructured.Unstructured) []condition {
	raw, _, _ := unstructured.NestedSlice(hr.Object, "status", "conditions")
	var out []condition
	for _, r := range raw {
		m, _ := r.(map[string]any)
		c := condition{}
		c.Type, _ = m["type"].(string)
		c.Status, _ = m["status"].(string)
		c.Reason, _ = m["reason"].(string)
		c.Message, _ = m["message"].(string)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b condition) int { return strings.Compare(a.Type, b.Type) })
	return out
}

// helmSecrets are the Helm release Secrets of the scenario's namespace,
// where its HelmRelease stores them.
func (s *session) helmSecrets() []helmSecret {
	list, err := s.c.api.Client.CoreV1().Secrets(s.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm"})
	require.NoError(s.t, err)
	out := []helmSecret{}
	for _, sec := range list.Items {
		out = append(out, helmSecret{Name: sec.Name, Status: sec.Labels["status"], Version: sec.Labels["version"]})
	}
	slices.SortFunc(out, func(a, b helmSecret) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func equalJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}
