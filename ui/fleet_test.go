package ui

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/fleetkv"
	"github.com/solar-pipeline/solar/renderer/load"
	"github.com/solar-pipeline/solar/renderer/rollout"
	"github.com/solar-pipeline/solar/renderer/rolloutstore"
)

// fleetEnv is the UI tests' API server with Devices in alpha (a1, a2, a3)
// and beta (b1, b2), a DeviceUpgrade "agent" with a rollout in each (its
// state in the layout), the fleet's bucket in a real nats-server holding
// their attempts and states, and a UI that reads it. Besides what startUI
// grants, alice may get devices and get and update deviceupgrades in alpha;
// bob may not see devices.
type fleetEnv struct {
	*uiEnv
	kv jetstream.KeyValue
}

func (e *fleetEnv) put(t *testing.T, key, value string) {
	t.Helper()
	_, err := e.kv.Put(context.Background(), key, []byte(value))
	require.NoError(t, err)
}

func (e *fleetEnv) device(t *testing.T, ns, name, id string, labels map[string]string) {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": api.APIVersion, "kind": api.KindDevice,
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": map[string]any{"deviceId": id, "platform": "linux/arm64"}}}
	u.SetLabels(labels)
	_, err := e.dyn.Resource(kube.GVR(api.KindDevice)).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
	require.NoError(t, err)
}

// startFleetUI starts it; login, when set, is the UI's OIDC login given its
// callback URL, as startUI's.
func startFleetUI(t *testing.T, login func(callback string) *OIDCOptions) *fleetEnv {
	t.Helper()
	ctx := context.Background()
	e := &fleetEnv{uiEnv: startUI(t, nil)}
	n := testenv.StartNATS(t)
	bucket := fleetkv.NATS{Servers: n.URL, Bucket: "solar-fleet", Mode: fleetkv.Create, Replicas: 1}
	_, done, err := fleetkv.Connect(ctx, bucket)
	require.NoError(t, err)
	done()
	_, js := n.Connect(t)
	e.kv, err = js.KeyValue(ctx, bucket.Bucket)
	require.NoError(t, err)
	e.put(t, "attempt.a1", `{"uuid":"0b8e2c3a-1d2f-5e4b-9a1c-2d3e4f5a6b7c","digest":"sha256:00","attempt":{"deviceId":"a1","targetVersion":"1.1.0"}}`)
	e.put(t, "state.a1", `{"state":"committed","version":"1.1.0","running":"1.1.0"}`)
	e.put(t, "state.a2", `{"state":"rollback-failed","step":"starting","version":"1.1.0","reason":"the old agent did not start"}`)
	e.put(t, "state.b1", `{"state":"committed","version":"9.9.9"}`)
	e.put(t, "state.b2", `{"state":"rollback-failed","reason":"beta-secret"}`)

	e.device(t, "alpha", "dev-a1", "a1", map[string]string{"ring": "canary"})
	e.device(t, "alpha", "dev-a2", "a2", nil)
	e.device(t, "alpha", "dev-a3", "a3", nil)
	e.device(t, "beta", "dev-b1", "b1", nil)
	e.device(t, "beta", "dev-b2", "b2", nil)
	upgrade := map[string]any{"agentVersion": "1.1.0", "artifact": "agent:1.1.0", "deviceIds": []any{"a1", "a2"},
		"rollout": map[string]any{"waves": []any{map[string]any{"name": "all"}}}}
	for _, ns := range []string{"alpha", "beta"} {
		e.create(t, api.KindDeviceUpgrade, ns, "agent", upgrade)
		_, err = rolloutstore.Update(ctx, e.server.opts.Store, ns, "deviceupgrade-agent", func(*rolloutstore.Doc) (*rolloutstore.Doc, error) {
			return &rolloutstore.Doc{State: rollout.State{Revision: "r1", Phase: rollout.Progressing}, From: map[string]string{},
				Decision: rollout.Decision{Phase: rollout.Progressing, Message: "wave all: 1 of 2 members passed, 2 needed",
					Members: []rollout.MemberDecision{{Name: "a1", Wave: "all", State: rollout.Passed}, {Name: "a2", Wave: "all", State: rollout.Admitted}}}}, nil
		}, rolloutstore.Options{})
		require.NoError(t, err)
	}
	grant(t, e.api, "alice-fleet", []rbacv1.PolicyRule{{APIGroups: []string{api.Group}, Resources: []string{"devices", "deviceupgrades"}, Verbs: []string{"get"}},
		{APIGroups: []string{api.Group}, Resources: []string{"deviceupgrades"}, Verbs: []string{"update"}}}, "alpha", "alice")

	// A second UI on the same API server and store, with the bucket: the
	// pages and the stream below are its.
	opts := e.server.opts
	opts.Fleet = &fleetkv.NATS{Servers: n.URL, Bucket: bucket.Bucket}
	var handler http.Handler
	e.http = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	e.http.StartTLS()
	if login != nil {
		opts.OIDC = login(e.http.URL + "/auth/callback")
	}
	e.server, err = New(opts)
	require.NoError(t, err)
	handler = e.server.Handler()
	t.Cleanup(e.http.Close)
	rctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	go func() { _ = e.server.Run(rctx) }()
	select {
	case <-e.server.Ready():
	case <-time.After(time.Minute):
		t.Fatal("the UI's watch did not start")
	}
	require.Eventually(t, func() bool {
		s, _ := e.server.fleet.lookup("b2")
		return s.State != nil
	}, 30*time.Second, 50*time.Millisecond, "the bucket's listing did not arrive")
	return e
}

// TestFleetPagesFollowRBAC (issue 51): alice, who may get devices in
// alpha, sees alpha's Devices with what the bucket holds of them (the
// rollback-failed one with the command that repairs it), by state on the
// overview, and alpha's device rollout with its device members and buttons;
// nothing of beta's. bob, who may not get devices, sees no fleet and no
// device rollout.
func TestFleetPagesFollowRBAC(t *testing.T) {
	e := startFleetUI(t, nil)
	alice, csrf := e.as("alice")
	bob, _ := e.as("bob")

	code, body, _ := e.do(t, alice, "GET", "/fleet/alpha", nil)
	require.Equal(t, http.StatusOK, code, body)
	for _, want := range []string{"dev-a1", "ring=canary", "linux/arm64", "committed", "1.1.0", "0b8e2c3a-1d2f-5e4b-9a1c-2d3e4f5a6b7c",
		"dev-a2", "rollback-failed", "at starting", "the old agent did not start", "solar fleet repair a2 --reason",
		"dev-a3", "none: 1", "committed: 1", "rollback-failed: 1"} {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "solar fleet repair a1", "only a rollback-failed device is to repair")
	for _, page := range []string{"/fleet/alpha", "/"} {
		_, body, _ = e.do(t, alice, "GET", page, nil)
		for _, never := range []string{"beta", "b1", "b2", "9.9.9"} {
			assert.NotContains(t, body, never, "%s: alice may not see beta", page)
		}
	}
	code, _, _ = e.do(t, alice, "GET", "/fleet/beta", nil)
	assert.Equal(t, http.StatusNotFound, code, "beta's fleet reads as missing to alice")
	code, _, _ = e.do(t, alice, "GET", "/fleet/x%2F..%2Fbeta", nil)
	assert.Equal(t, http.StatusNotFound, code, "a path out of alpha")

	_, body, _ = e.do(t, alice, "GET", "/", nil)
	assert.Contains(t, body, `href="/fleet/alpha"`)
	assert.Contains(t, body, "rollback-failed: 1")
	assert.Contains(t, body, `href="/rollouts/alpha/deviceupgrade-agent"`, "the device rollout is listed")
	code, body, _ = e.do(t, alice, "GET", "/rollouts/alpha/deviceupgrade-agent", nil)
	require.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "<td>a2</td>", "its members are devices")
	assert.Contains(t, body, `action="/rollouts/alpha/deviceupgrade-agent/pause"`, "alice may update the DeviceUpgrade")
	code, body, _ = e.do(t, alice, "POST", "/rollouts/alpha/deviceupgrade-agent/pause", url.Values{"csrf": {csrf}})
	require.Equal(t, http.StatusSeeOther, code, body)
	doc, err := rolloutstore.Read(context.Background(), e.server.opts.Store, "alpha", "deviceupgrade-agent")
	require.NoError(t, err)
	assert.True(t, doc.Paused)

	code, _, _ = e.do(t, bob, "GET", "/fleet/alpha", nil)
	assert.Equal(t, http.StatusNotFound, code, "bob may not get devices")
	_, body, _ = e.do(t, bob, "GET", "/", nil)
	assert.NotContains(t, body, "/fleet/alpha")
	assert.NotContains(t, body, "deviceupgrade-agent", "bob may not get deviceupgrades")
	code, _, _ = e.do(t, bob, "GET", "/rollouts/alpha/deviceupgrade-agent", nil)
	assert.Equal(t, http.StatusNotFound, code)
}

// nextDevice is a stream's next device event's data.
func nextDevice(lines *bufio.Scanner) string {
	device := false
	for lines.Scan() {
		l := lines.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			device = l == "event: device"
		case device && strings.HasPrefix(l, "data: "):
			return l
		}
	}
	return ""
}

// TestFleetStreamLive (issue 51): a state a device writes into the bucket
// reaches alice's open stream without a reload, with alpha's new counts;
// beta's, written first, never does.
func TestFleetStreamLive(t *testing.T) {
	e := startFleetUI(t, nil)
	alice, _ := e.as("alice")
	lines := e.stream(t, alice)

	e.put(t, "state.b1", `{"state":"rolled-back","reason":"beta-secret"}`)
	time.Sleep(time.Second) // beta's change is published (and withheld) first
	e.put(t, "state.a3", `{"state":"waiting-for-window","version":"1.1.0","reason":"the window opens at 02:00Z"}`)
	ev := nextDevice(lines)
	for _, want := range []string{`"name":"dev-a3"`, `"deviceId":"a3"`, `"state":"waiting-for-window"`, "the window opens at 02:00Z",
		`{"State":"waiting-for-window","N":1}`} {
		assert.Contains(t, ev, want)
	}
	assert.NotContains(t, ev, "beta")
	assert.NotContains(t, ev, `"none"`, "a3 is counted by its new state")

	// A new Device of alpha, then a state of a rollback that failed: the
	// page is told of both, the second with the repair command.
	e.device(t, "alpha", "dev-a4", "a4", nil)
	assert.Contains(t, nextDevice(lines), `"name":"dev-a4"`)
	e.put(t, "state.a4", `{"state":"rollback-failed"}`)
	assert.Contains(t, nextDevice(lines), `"repair":"solar fleet repair a4 --reason`)
}

// TestFleetAccountWithoutRights: a UI whose account holds the rules of an
// older config/ui/rbac.yaml (no devices, no deviceupgrades) still serves
// the Targets after its wait for the fleet's caches, and no fleet.
func TestFleetAccountWithoutRights(t *testing.T) {
	e := startUI(t, nil)
	const account = "system:serviceaccount:solar-system:old-ui"
	grant(t, e.api, "old-ui", []rbacv1.PolicyRule{
		{APIGroups: []string{api.Group}, Resources: []string{"targets", "targetreports", "rollouts"}, Verbs: []string{"list", "watch"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}}}, "", account)
	opts := e.server.opts
	opts.Config = rest.CopyConfig(e.api.Config)
	opts.Config.Impersonate = rest.ImpersonationConfig{UserName: account}
	opts.Fleet = &fleetkv.NATS{Servers: "nats://127.0.0.1:1", Bucket: "solar-fleet"}
	s, err := New(opts)
	require.NoError(t, err)
	s.fleet.syncWait, s.fleet.retry = time.Second, time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Run(ctx) }()
	select {
	case <-s.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the UI waits for caches its account may not fill")
	}
	_, ok := s.model.target(load.ID{Namespace: "alpha", Name: "alpha-edge"})
	assert.True(t, ok, "the Targets are served")
	assert.Empty(t, s.fleet.namespaces())
}
