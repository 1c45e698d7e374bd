package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"

	solarapi "github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/api/kube"
	"github.com/solar-pipeline/solar/internal/testkit/storetest"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// TestDryRunWritesNothing: after a real sync, render and publish, the input
// changes (a Release's values, and edge-2 revoked), and every command's dry
// run is run against the real API server, registry, layout and cache. Each
// lists every object of the API server's namespaces, every tag of the
// registry and every file of the layout and the cache before and after: the
// same, each time.
func TestDryRunWritesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs a real API server and registry")
	}
	api := testenv.StartAPIServer(t)
	reg := testenv.StartRegistry(t, testenv.RegistryOptions{})
	ctx := context.Background()
	api.CreateNamespaces(t, "alpha", "beta")
	dir := t.TempDir()
	testenv.CopyExamples(t, dir)
	examples := filepath.Join(dir, "examples")
	out, cache := filepath.Join(dir, "out"), filepath.Join(dir, "cache")
	registry := reg.Host + "/solar"
	login := []string{"--plain-http", "--username", reg.Username, "--password-stdin"}
	cli := func(args ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		if args[0] != "verify" && args[0] != "gc" {
			args = append(args, "--cache-dir", cache)
		}
		code := run(ctx, args, strings.NewReader(reg.Password+"\n"), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	for _, args := range [][]string{
		{"credentials", "sync", "--kubeconfig", api.Kubeconfig, examples},
		{"render", "--kubeconfig", api.Kubeconfig, "--out", out, examples},
		append([]string{"publish", "--kubeconfig", api.Kubeconfig, "--registry", registry, examples}, login...),
	} {
		code, output := cli(args...)
		require.Equal(t, 0, code, "%v: %s", args, output)
	}

	// The input changes: every dry run below has something it would write.
	releases := filepath.Join(examples, "alpha", "releases.yaml")
	b, err := os.ReadFile(releases)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(releases, bytes.Replace(b, []byte("replicaCount: 2"), []byte("replicaCount: 7"), 1), 0o644))
	targets := filepath.Join(examples, "alpha", "targets.yaml")
	b, err = os.ReadFile(targets)
	require.NoError(t, err)
	revoked := bytes.Replace(b, []byte("  name: edge-2\n"), []byte("  name: edge-2\n  annotations:\n    "+solarapi.AnnotationAgentCredential+": revoked\n"), 1)
	require.NotEqual(t, b, revoked)
	require.NoError(t, os.WriteFile(targets, revoked, 0o644))

	dyn, err := dynamic.NewForConfig(api.Config)
	require.NoError(t, err)
	snapshot := func() map[string]string {
		s := map[string]string{}
		for _, ns := range []string{"alpha", "beta"} {
			lists := map[string]func() (runtime.Object, error){
				"ServiceAccount": func() (runtime.Object, error) {
					return api.Client.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{})
				},
				"Secret": func() (runtime.Object, error) { return api.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{}) },
				"Role":   func() (runtime.Object, error) { return api.Client.RbacV1().Roles(ns).List(ctx, metav1.ListOptions{}) },
				"RoleBinding": func() (runtime.Object, error) {
					return api.Client.RbacV1().RoleBindings(ns).List(ctx, metav1.ListOptions{})
				},
				"Target": func() (runtime.Object, error) {
					return dyn.Resource(kube.TargetGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
				},
				"TargetReport": func() (runtime.Object, error) {
					return dyn.Resource(kube.TargetReportGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
				},
			}
			for kind, list := range lists {
				l, err := list()
				require.NoError(t, err)
				items, err := apimeta.ExtractList(l)
				require.NoError(t, err)
				for _, item := range items {
					o, err := apimeta.Accessor(item)
					require.NoError(t, err)
					s[kind+" "+ns+"/"+o.GetName()] = o.GetResourceVersion()
				}
			}
		}
		for tag, digest := range storetest.RegistryTags(t, reg) {
			s["tag "+tag] = digest
		}
		for _, root := range []string{out, cache} {
			require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				info, err := d.Info()
				if err != nil {
					return err
				}
				sum := ""
				if d.Type().IsRegular() {
					b, err := os.ReadFile(p)
					if err != nil {
						return err
					}
					h := sha256.Sum256(b)
					sum = hex.EncodeToString(h[:])
				}
				s["file "+p] = fmt.Sprintf("%v %s %d", info.Mode(), sum, info.ModTime().UnixNano())
				return nil
			}))
		}
		return s
	}

	before := snapshot()
	tokens := 0
	for k := range before {
		if strings.HasPrefix(k, "Secret alpha/solar-agent-edge-2-token-") {
			tokens++
		}
	}
	require.Equal(t, 1, tokens, "edge-2 has a token Secret, which a revoking sync would delete")
	for _, args := range [][]string{
		{"credentials", "sync", "--dry-run", "--kubeconfig", api.Kubeconfig, examples},
		{"render", "--dry-run", "--kubeconfig", api.Kubeconfig, "--out", out, examples},
		{"render", "--dry-run", "--prune", "--kubeconfig", api.Kubeconfig, "--out", out, examples},
		append([]string{"publish", "--dry-run", "--kubeconfig", api.Kubeconfig, "--registry", registry, examples}, login...),
		append([]string{"publish", "--dry-run", "--prune", "--kubeconfig", api.Kubeconfig, "--registry", registry, examples}, login...),
		{"diff", "--kubeconfig", api.Kubeconfig, "--out", out, examples},
		append([]string{"diff", "--kubeconfig", api.Kubeconfig, "--registry", registry, examples}, login...),
		{"gc", "--dry-run", "--out", out, "--keep", "1"},
		append([]string{"gc", "--dry-run", "--registry", registry, "--keep", "1"}, login...),
	} {
		code, output := cli(args...)
		// The revoked edge-2 is not a failure: 0, or 2 for diff's changes.
		assert.Contains(t, []int{0, 2}, code, "%v: %s", args, output)
		assert.Equal(t, before, snapshot(), "solar %s wrote something", strings.Join(args, " "))
	}
}
