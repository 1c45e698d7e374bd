package objdiff

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// yamlCorpus are documents whose YAML could come out otherwise than through
// sigs.k8s.io/yaml's JSON round trip: numbers of every shape, strings that
// read as other types, keys in go-yaml's natural order, text in blocks,
// empty collections, lists of lists.
const yamlCorpus = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app
  labels: {a10: x, a9: y, "1": one, "": empty, "key with: colon": z}
spec:
  replicas: 10
  numbers: [0, -0, -0.0, 1, -1, 0.5, 1.0, 1e3, 1.5e-7, 1e21, 1e+300, 9007199254740993, 12345678901234567890, 123456789012345678901234567890, 0x10, 010]
  strings: ["10", "1.0", "1e3", "true", "yes", "on", "no", "~", "null", "", " lead", "trail ", "a: b", "- x", "#c", "multi\nline\n", "tab\there", "é ü 中", "\u2028", "<&>", "'q'", "\"dq\""]
  bools: [true, false, null]
  empty: {map: {}, list: []}
  nested: [[1, [2, {a: [3]}]], {b: {c: {d: 1.25}}}]
  block: |
    line one
      indented
    last
`

// TestMarshalYAMLAsSigsYAML: the text a diff shows is byte for byte what
// sigs.k8s.io/yaml.Marshal (its JSON round trip) made before.
func TestMarshalYAMLAsSigsYAML(t *testing.T) {
	for _, doc := range []string{yamlCorpus, deploymentDoc} {
		o := testObject(t, 3, doc)
		want, err := yaml.Marshal(o.body)
		require.NoError(t, err)
		got, err := marshalYAML(o.body)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got))
	}
	secret := testObject(t, 1, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata: {a: YQ==}\nstringData: {n: '5'}\n")
	want, err := yaml.Marshal(maskSecret(secret.body))
	require.NoError(t, err)
	got, err := marshalYAML(maskSecret(secret.body))
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
}

// deploymentDoc is an object as a diff shows it often: helm create's
// Deployment, rendered.
const deploymentDoc = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: apps-target-0-app-0
  labels: {helm.sh/chart: app-1.0.0, app.kubernetes.io/name: app, app.kubernetes.io/instance: apps-target-0-app-0, app.kubernetes.io/version: 1.16.0, app.kubernetes.io/managed-by: Helm}
spec:
  replicas: 10
  selector:
    matchLabels: {app.kubernetes.io/name: app, app.kubernetes.io/instance: apps-target-0-app-0}
  template:
    metadata:
      labels: {helm.sh/chart: app-1.0.0, app.kubernetes.io/name: app, app.kubernetes.io/instance: apps-target-0-app-0, app.kubernetes.io/version: 1.16.0, app.kubernetes.io/managed-by: Helm}
    spec:
      serviceAccountName: apps-target-0-app-0
      containers:
      - name: app
        image: "nginx:1.0.0"
        imagePullPolicy: IfNotPresent
        ports: [{name: http, containerPort: 80, protocol: TCP}]
        livenessProbe: {httpGet: {path: /, port: http}}
        readinessProbe: {httpGet: {path: /, port: http}}
`

// BenchmarkText and BenchmarkYAMLRoundTrip: an object's text is made
// without parsing its JSON again, which was most of what a diff's text
// allocated (make bench: on an idle machine about 73 KB per text against
// 180 KB per sigs.k8s.io/yaml.Marshal of the same object). A benchmark, not a
// test: the bytes a test can count include what the rest of the process
// allocates meanwhile, which under load made a test of the ratio fail.
func BenchmarkText(b *testing.B) {
	o := testObject(b, 3, deploymentDoc)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = text(o, true)
	}
}

func BenchmarkYAMLRoundTrip(b *testing.B) {
	o := testObject(b, 3, deploymentDoc)
	b.ReportAllocs()
	for b.Loop() {
		_, _ = yaml.Marshal(o.body)
	}
}
