package testenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/renderer/mirror"
)

// A pod names its image at the images registry, by digest; the node's
// containerd has the site's registry (TLS, basic auth) as that registry's
// mirror, the image relocated there as renderer/mirror names it
// (mirror/<images host>/solar-test/podbin). With the images registry
// stopped, the sandbox and the container still start: every pull came from
// the site.
func TestNodePullsFromMirror(t *testing.T) {
	SkipUnlessNodeCan(t)
	api := StartCluster(t)
	images := Portless(t, StartRegistry(t, RegistryOptions{NoAuth: true}), "127.0.0.2")
	site := StartRegistry(t, RegistryOptions{TLS: true})
	node := StartNodeWith(t, api, images, NodeOptions{Mirrors: []Mirror{
		{Source: images.Host, Site: site, Path: "mirror/" + images.Host},
	}})
	relocated, err := mirror.Reference(site.Host+"/mirror", node.PodImage)
	require.NoError(t, err)
	require.Equal(t, site.Host+"/mirror/127.0.0.2/solar-test/podbin"+node.PodImage[strings.LastIndex(node.PodImage, "@"):], relocated)
	copyImage(t, node.PodImage, relocated, site)

	images.Stop()
	wire := StartTripwire(t, images.Host+":80")
	_, err = (&http.Client{Timeout: time.Second}).Get("http://" + images.Host + "/v2/")
	require.Error(t, err, "the images registry no longer answers")

	ctx := context.Background()
	const ns = "mirrored"
	api.CreateNamespaces(t, ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "from-site", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node.Name},
			Containers:   []corev1.Container{{Name: "app", Image: node.PodImage, Args: []string{"mirrored"}}},
		},
	}
	require.Eventually(t, func() bool {
		_, err := api.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "creating the pod")
	var got *corev1.Pod
	require.Eventually(t, func() bool {
		got, err = api.Client.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning
	}, 2*time.Minute, 200*time.Millisecond, "pod Running on %s, pulled from the site", node.Name)
	require.Len(t, got.Status.ContainerStatuses, 1)
	status := got.Status.ContainerStatuses[0]
	assert.NotNil(t, status.State.Running, "container state: %+v", status.State)
	assert.True(t, strings.HasSuffix(status.ImageID, node.PodImage[strings.LastIndex(node.PodImage, "@"):]), "ran by digest: %s", status.ImageID)
	assert.Equal(t, 1, wire.Connections(), "containerd never tried the images registry (the one connection is the test's own)")
}

// copyImage copies the image from (anonymous, plain HTTP) to the reference
// to in site (its CA, its credentials), manifest and blobs unchanged.
func copyImage(t *testing.T, from, to string, site *Registry) {
	t.Helper()
	src, err := name.ParseReference(from, name.Insecure)
	require.NoError(t, err)
	desc, err := remote.Get(src)
	require.NoError(t, err)
	img, err := desc.Image()
	require.NoError(t, err)
	dst, err := name.ParseReference(to)
	require.NoError(t, err)
	pem, err := os.ReadFile(site.CAFile)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(pem))
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	require.NoError(t, remote.Write(dst, img, remote.WithTransport(tr),
		remote.WithAuth(&authn.Basic{Username: site.Username, Password: site.Password})), "copying %s to %s", from, to)
}
