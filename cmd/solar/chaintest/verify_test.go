package chaintest

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/internal/testkit/helmdriver"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/sign"
)

// TestVerifiedChain runs the chain with signed charts on the real
// source-controller: publish --signing-key signs every chart and
// bootstrap-manifests --verify-key makes the first-contact OCIRepository and
// the bootstrap charts' OCIRepositories verify them (spec.verify, provider
// cosign, Secret solar-bootstrap-cosign).
//  1. Signed with the key the Secret holds: every verifying source is
//     SourceVerified and Ready, and the chain installs down to the
//     applications.
//  2. A release chart's tag overwritten with unsigned content, and a new
//     version signed with another key: source-controller refuses it
//     (SourceVerified False, VerificationError), and nothing is upgraded.
//  3. Rotation: with the old and the new key in the Secret both verify; with
//     the old key removed, a chart signed only with it is refused, and
//     signing it with the new key lets it through.
//
// Every change is to alpha/edge-1's podinfo (the Release podinfo-stable).
func TestVerifiedChain(t *testing.T) {
	start := time.Now()
	dir := t.TempDir()
	// The new key is ECDSA P-256, the kind cosign generate-key-pair makes:
	// the rotation shows source-controller verifying it.
	oldKey, newKey, otherKey := newTestKey(t, dir, "old", false), newTestKey(t, dir, "new", true), newTestKey(t, dir, "other", false)
	e := startChain(t, chainOptions{publish: oldKey.signing(), bootstrap: verifyKeys(oldKey)})
	v := &verifyEnv{chainEnv: e, tg: e.targets[0], key: "alpha/edge-1"}
	require.Equal(t, "flux-alpha-edge-1", v.tg.flux)
	v.podinfo = e.names[v.key]["podinfo"]

	v.installsVerified(oldKey)
	t.Logf("1. signed chain installed and verified: %s", time.Since(start).Round(time.Millisecond))
	v.refusesUnsignedTag(oldKey)
	t.Logf("2a. unsigned tag refused, re-published: %s", time.Since(start).Round(time.Millisecond))
	v.refusesOtherKey(otherKey)
	t.Logf("2b. other key refused: %s", time.Since(start).Round(time.Millisecond))
	v.rotates(oldKey, newKey)
	t.Logf("3. key rotation: %s", time.Since(start).Round(time.Millisecond))
}

// verifyEnv is the chain with the one Target and release whose charts the
// test changes.
type verifyEnv struct {
	*chainEnv
	tg      chainTarget
	key     string // tg as namespace/name
	podinfo chain.Release
}

// installsVerified: the first install, every verifying source verified.
func (v *verifyEnv) installsVerified(k testKey) {
	t := v.t
	for _, ev := range v.settleOK() {
		require.NotContains(t, ev.Action, "failed", "%s", ev)
	}
	assert.Empty(t, v.notReadyHelmReleases(), "every HelmRelease of every level is Ready")

	// Exactly the first-contact OCIRepository and the bootstrap charts'
	// ones verify (the applications' charts are not Solar's to sign).
	var want []string
	for _, tg := range v.targets {
		key := tg.ns + "/" + tg.name
		want = append(want, tg.flux+"/"+chain.Bootstrap)
		for _, rel := range v.reports[key].Releases {
			require.NotEmpty(t, rel.Signature, "%s %s: publish --signing-key signed it", key, rel.Key)
			want = append(want, tg.flux+"/"+v.namesOf(key, rel.Key).Source.Name)
		}
		require.NotEmpty(t, v.reports[key].Signature, key)
	}
	verifying := v.verifyingRepos()
	assert.ElementsMatch(t, want, verifying)
	for _, nn := range verifying {
		ns, name, _ := strings.Cut(nn, "/")
		v.assertVerified(ns, name)
	}

	secret, err := v.api.Client.CoreV1().Secrets(v.tg.flux).Get(context.Background(), chain.VerifySecret, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string][]byte{"key-1.pub": k.key.PublicPEM()}, secret.Data, "only the public key")

	for _, tg := range v.targets {
		key := tg.ns + "/" + tg.name
		for _, rel := range v.reports[key].Releases {
			n := v.namesOf(key, rel.Key)
			ok, why := v.available(n.TargetNamespace, n.AppRelease)
			assert.True(t, ok, "%s: the Deployment of %s is Available: %s", key, rel.Key, why)
		}
	}
	assert.Equal(t, float64(2), v.replicas())
}

// refusesUnsignedTag overwrites the tag of edge-1's podinfo release chart,
// which its bootstrap chart pins, with other, unsigned content: it is
// refused, nothing changes; verify names the index entry that no longer
// holds, and publishing again with the key and --full puts a signed version
// in its place.
func (v *verifyEnv) refusesUnsignedTag(k testKey) {
	t := v.t
	rel := v.release(v.reports[v.key], "podinfo")
	testenv.PushChart(t, v.render, "testdata/app", path.Join("solar", path.Dir(rel.Repository)), path.Base(rel.Repository), rel.Version)
	f := v.flux()
	ready, verified := v.waitRefused(v.podinfo.Source.Name, f.Reconcile(v.podinfo.Source.Name))
	t.Logf("unsigned %s:%s: Ready %+v; SourceVerified %+v", rel.Repository, rel.Version, ready, verified)
	require.NotEmpty(t, rel.Digest)
	assert.NotContains(t, verified.Message, rel.Digest, "the refused revision is the overwritten tag's, not Solar's")
	v.assertNothingUpgraded(v.podinfo.Source.Name, 2)

	// The namespace index still names that version as Solar's: a publish
	// that trusts it does not see the overwrite (docs/index.md, what the
	// index can miss); solar verify does.
	trusted := v.release(v.publish(k.signing()...)[v.key], "podinfo")
	assert.Equal(t, publish.Unchanged, trusted.Action, "the index is trusted without asking the repository")
	code, stdout, _ := v.solar(v.render.Password, "verify", "--username", v.render.Username, "--password-stdin",
		"--ca-file", v.render.CAFile, "--registry", v.registry())
	assert.Equal(t, 1, code)
	assert.Contains(t, stdout, rel.Repository+": the index names "+rel.Version+" as "+rel.Digest+", but the store holds")

	// publish --full asks every repository: Solar publishes the content it
	// renders at the next version, signed; the bootstrap chart names that
	// one and the chain is whole again.
	tr := v.publish(append(k.signing(), "--full")...)[v.key]
	again := v.release(tr, "podinfo")
	assert.Equal(t, publish.Update, again.Action, "the overwritten version's content is not Solar's")
	assert.Equal(t, publish.Create, again.SignatureAction)
	for _, ev := range v.settleOK() {
		require.NotContains(t, ev.Action, "failed", "%s", ev)
	}
	v.assertVerified(v.tg.flux, v.podinfo.Source.Name)
	assert.Equal(t, float64(2), v.replicas())
}

// refusesOtherKey publishes a change of edge-1's podinfo signed with a key
// the Secret does not hold: the bootstrap chart's new version is refused.
func (v *verifyEnv) refusesOtherKey(other testKey) {
	t := v.t
	v.edit("alpha/releases.yaml", "replicaCount: 2", "replicaCount: 3")
	tr := v.publish(other.signing()...)[v.key]
	require.Equal(t, publish.Update, tr.Action)
	require.Equal(t, publish.Create, tr.SignatureAction)
	ready, verified := v.waitRefused(chain.Bootstrap, v.flux().Reconcile(chain.Bootstrap))
	t.Logf("bootstrap %s signed with another key: Ready %+v; SourceVerified %+v", tr.Version, ready, verified)
	v.assertNothingUpgraded(chain.Bootstrap, 2)
}

// rotates: the Secret holds the old and the new key. The version refused
// before, signed with the new key as well, goes through; so does one signed
// with the old key only. With the old key removed, the revision in place
// stays (source-controller verifies a revision once), a new one signed only
// with the old key is refused, and signing it with the new key heals it.
func (v *verifyEnv) rotates(oldKey, newKey testKey) {
	t := v.t
	edge1 := map[string]bool{
		"upgrade " + v.tg.flux + "/" + chain.Bootstrap:                      true,
		"upgrade " + v.tg.flux + "/" + v.podinfo.Source.Name:                true,
		"upgrade " + v.podinfo.TargetNamespace + "/" + v.podinfo.AppRelease: true,
	}
	v.setVerifyKeys(oldKey, newKey)
	tr := v.publish(newKey.signing()...)[v.key]
	require.Equal(t, publish.Unchanged, tr.Action)
	require.Equal(t, publish.Create, tr.SignatureAction, "the refused version, signed with the new key too")
	assert.Equal(t, edge1, actions(v.settleOK()), "the bootstrap, the release chart and the application of edge-1")
	assert.Equal(t, float64(3), v.replicas())
	v.assertVerified(v.tg.flux, chain.Bootstrap)
	v.assertVerified(v.tg.flux, v.podinfo.Source.Name)

	v.edit("alpha/releases.yaml", "replicaCount: 3", "replicaCount: 4")
	v.publish(oldKey.signing()...)
	assert.Equal(t, edge1, actions(v.settleOK()), "signed with the old key only, still in the Secret")
	assert.Equal(t, float64(4), v.replicas())
	v.assertVerified(v.tg.flux, v.podinfo.Source.Name)

	v.setVerifyKeys(newKey)
	f := v.flux()
	f.Ready(chain.Bootstrap, f.Reconcile(chain.Bootstrap))
	v.assertVerified(v.tg.flux, chain.Bootstrap)

	v.edit("alpha/releases.yaml", "replicaCount: 4", "replicaCount: 5")
	tr = v.publish(oldKey.signing()...)[v.key]
	ready, verified := v.waitRefused(chain.Bootstrap, f.Reconcile(chain.Bootstrap))
	t.Logf("bootstrap %s signed with the removed key: Ready %+v; SourceVerified %+v", tr.Version, ready, verified)
	v.assertNothingUpgraded(chain.Bootstrap, 4)

	tr = v.publish(newKey.signing()...)[v.key]
	require.Equal(t, publish.Create, tr.SignatureAction)
	assert.Equal(t, edge1, actions(v.settleOK()))
	assert.Equal(t, float64(5), v.replicas())
}

// namesOf are the chain's names of a release of a Target.
func (v *verifyEnv) namesOf(target, key string) chain.Release { return v.names[target][key] }

func (v *verifyEnv) flux() *testenv.Flux {
	return &testenv.Flux{T: v.t, Dyn: v.dyn, NS: v.tg.flux}
}

// replicas is the replicaCount edge-1's podinfo was installed with.
func (v *verifyEnv) replicas() any { return v.appValues(v.podinfo)["replicaCount"] }

// release is the report of a Target's release chart.
func (v *verifyEnv) release(tr pipeline.TargetReport, key string) pipeline.ReleaseReport {
	for _, rel := range tr.Releases {
		if rel.Key == key {
			return rel
		}
	}
	v.t.Fatalf("%s/%s has no release %s", tr.Namespace, tr.Name, key)
	return pipeline.ReleaseReport{}
}

// settleOK settles the chain, which must settle.
func (v *verifyEnv) settleOK() []helmdriver.Event {
	v.t.Helper()
	events, err := v.settle(3 * time.Minute)
	require.NoError(v.t, err, "events so far: %v\nnot Ready: %v", events, v.notReadyHelmReleases())
	return events
}

// assertNothingUpgraded: once the HelmRelease of the refused source says
// so (SourceNotReady), it is the only one not Ready, no Helm action ran, and
// edge-1's podinfo keeps its replicas.
func (v *verifyEnv) assertNothingUpgraded(hr string, replicas float64) {
	t := v.t
	t.Helper()
	want := v.tg.flux + "/" + hr + " "
	var notReady []string
	require.Eventually(t, func() bool {
		notReady = v.notReadyHelmReleases()
		return len(notReady) == 1 && strings.HasPrefix(notReady[0], want) && strings.Contains(notReady[0], "SourceNotReady")
	}, 60*time.Second, 200*time.Millisecond, "only %s waits for its source: %v", hr, notReady)
	events, _ := v.drv.Settle(context.Background(), time.Millisecond)
	assert.Empty(t, events, "no Helm action on a refused chart")
	assert.Equal(t, replicas, v.replicas(), "the application is unchanged")
}

// verifyingRepos are the OCIRepositories (namespace/name) with spec.verify:
// cosign with the Secret of public keys.
func (v *verifyEnv) verifyingRepos() []string {
	list, err := v.dyn.Resource(testenv.OCIRepositoryGVR).List(context.Background(), metav1.ListOptions{})
	require.NoError(v.t, err)
	var out []string
	for _, r := range list.Items {
		verify, ok, _ := unstructured.NestedMap(r.Object, "spec", "verify")
		if !ok {
			continue
		}
		assert.Equal(v.t, map[string]any{"provider": "cosign", "secretRef": map[string]any{"name": chain.VerifySecret}}, verify, "%s/%s", r.GetNamespace(), r.GetName())
		out = append(out, r.GetNamespace()+"/"+r.GetName())
	}
	return out
}

// condition is a status condition; zero when absent.
type condition struct{ Status, Reason, Message string }

// repoConditions are an OCIRepository's Ready and SourceVerified conditions
// and the reconcile request it handled last.
func (v *verifyEnv) repoConditions(ns, name string) (ready, verified condition, handled string) {
	obj, err := v.dyn.Resource(testenv.OCIRepositoryGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	require.NoError(v.t, err)
	handled, _, _ = unstructured.NestedString(obj.Object, "status", "lastHandledReconcileAt")
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		cond := condition{fmt.Sprint(m["status"]), fmt.Sprint(m["reason"]), fmt.Sprint(m["message"])}
		switch m["type"] {
		case meta.ReadyCondition:
			ready = cond
		case sourcev1.SourceVerifiedCondition:
			verified = cond
		}
	}
	return ready, verified, handled
}

func (v *verifyEnv) assertVerified(ns, name string) {
	v.t.Helper()
	ready, verified, _ := v.repoConditions(ns, name)
	assert.Equal(v.t, string(metav1.ConditionTrue), verified.Status, "%s/%s SourceVerified: %+v", ns, name, verified)
	assert.Equal(v.t, meta.SucceededReason, verified.Reason, "%s/%s", ns, name)
	assert.Equal(v.t, string(metav1.ConditionTrue), ready.Status, "%s/%s Ready: %+v", ns, name, ready)
}

// waitRefused waits until edge-1's OCIRepository handled the reconcile
// request and refused the chart: SourceVerified False (VerificationError,
// no key matched) and Ready False.
func (v *verifyEnv) waitRefused(name, requested string) (ready, verified condition) {
	t := v.t
	t.Helper()
	var handled string
	require.Eventually(t, func() bool {
		ready, verified, handled = v.repoConditions(v.tg.flux, name)
		return handled == requested && verified.Status == string(metav1.ConditionFalse)
	}, 90*time.Second, 250*time.Millisecond, "%s/%s refuses the chart; Ready %+v, SourceVerified %+v", v.tg.flux, name, ready, verified)
	assert.Equal(t, sourcev1.VerificationError, verified.Reason)
	assert.Contains(t, verified.Message, "failed to verify the signature using provider 'cosign': no matching signatures were found")
	assert.Equal(t, string(metav1.ConditionFalse), ready.Status)
	assert.Equal(t, sourcev1.VerificationError, ready.Reason)
	return ready, verified
}

// setVerifyKeys replaces edge-1's Secret of public keys with what
// bootstrap-manifests --verify-key prints for keys.
func (v *verifyEnv) setVerifyKeys(keys ...testKey) {
	t := v.t
	var secret *corev1.Secret
	for _, doc := range strings.Split(v.bootstrapManifests(v.tg, verifyKeys(keys...)...), "\n---") {
		var s corev1.Secret
		require.NoError(t, yaml.Unmarshal([]byte(doc), &s))
		if s.Kind == "Secret" && s.Name == chain.VerifySecret {
			secret = &s
		}
	}
	require.NotNil(t, secret, "bootstrap-manifests prints %s", chain.VerifySecret)
	require.Len(t, secret.Data, len(keys))
	for i, k := range keys {
		require.Equal(t, string(k.key.PublicPEM()), string(secret.Data[fmt.Sprintf("key-%d.pub", i+1)]))
	}
	secret.Namespace = v.tg.flux
	_, err := v.api.Client.CoreV1().Secrets(v.tg.flux).Update(context.Background(), secret, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// testKey is an Ed25519 or ECDSA P-256 signing key as openssl genpkey
// writes it (PKCS #8), and its public key, as files.
type testKey struct {
	priv, pub string
	key       *sign.Key
}

func newTestKey(t *testing.T, dir, name string, ec bool) testKey {
	var priv crypto.Signer
	var err error
	if ec {
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	} else {
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	}
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	require.NoError(t, err)
	k := testKey{priv: filepath.Join(dir, name+".pem"), pub: filepath.Join(dir, name+".pub")}
	require.NoError(t, os.WriteFile(k.priv, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	k.key, err = sign.NewKey(priv)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(k.pub, k.key.PublicPEM(), 0o644))
	return k
}

func (k testKey) signing() []string { return []string{"--signing-key", k.priv} }

func verifyKeys(keys ...testKey) []string {
	var args []string
	for _, k := range keys {
		args = append(args, "--verify-key", k.pub)
	}
	return args
}
