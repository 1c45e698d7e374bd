package main

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/renderer/chain"
	"github.com/solar-pipeline/solar/renderer/chart"
)

func newBootstrapCmd(g *globals) *cobra.Command {
	var registry, username, caFile, fluxNS string
	var passwordStdin, plainHTTP bool
	cmd := &cobra.Command{
		Use:   "bootstrap-manifests TARGET --registry HOST[:PORT][/PREFIX] [-n NS]",
		Short: "Print what a Target's cluster needs once to pull its bootstrap chart",
		Long: `bootstrap-manifests prints, as YAML for kubectl apply, what a Target's cluster
needs once so that Flux pulls everything else solar publishes for it:
  - Secret solar-bootstrap-pull (kubernetes.io/dockerconfigjson): the registry
    credentials from --username/--password-stdin, else a clearly marked
    placeholder to fill in;
  - Secret solar-bootstrap-ca, with --ca-file: the CA of the registry;
  - OCIRepository solar-bootstrap: oci://<registry>/<ns>/bootstrap-<target>,
    the highest version (semver >=0.0.0), Helm chart layer;
  - HelmRelease solar-bootstrap of that chart (remediation retries 3, tests,
    drift detection), with values that make the chart's own OCIRepositories use
    the same Secrets. Its HelmReleases, solar-bootstrap-<uniqueName>, install
    the release charts; theirs, <target>-<uniqueName>, the applications
    (README, "Proven with Flux itself", lists every level).
The objects go to the Flux namespace (--flux-namespace, default flux-system).`,
		Example: `  solar bootstrap-manifests edge-1 -n alpha --registry registry.example.com/solar | kubectl apply -f -
  echo "$PULL_TOKEN" | solar bootstrap-manifests edge-1 -n alpha --registry 127.0.0.1:5000 \
      --username edge-1 --password-stdin --ca-file ca.pem > edge-1.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if registry == "" {
				return fmt.Errorf("--registry is required: HOST[:PORT][/PREFIX]")
			}
			registry = strings.Trim(registry, "/")
			host, _, _ := strings.Cut(registry, "/")
			target, ns := args[0], cmp.Or(g.namespace, "default")
			auth := map[string]string{
				"username": "REPLACE-WITH-THE-PULL-USERNAME",
				"password": "REPLACE-WITH-THE-PULL-PASSWORD",
			}
			placeholder := true
			if passwordStdin {
				if username == "" {
					return fmt.Errorf("--password-stdin needs --username")
				}
				b, err := io.ReadAll(cmd.InOrStdin())
				if err != nil {
					return fmt.Errorf("reading the password from stdin: %w", err)
				}
				password := strings.TrimRight(string(b), "\r\n")
				auth = map[string]string{"username": username, "password": password,
					"auth": base64.StdEncoding.EncodeToString([]byte(username + ":" + password))}
				placeholder = false
			}
			dockerConfig, err := json.Marshal(map[string]any{"auths": map[string]any{host: auth}})
			if err != nil {
				return err
			}
			meta := func(name string) map[string]any {
				return map[string]any{"name": name, "namespace": fluxNS,
					"labels": map[string]any{"solar.opendefense.cloud/target": target}}
			}
			secret := map[string]any{
				"apiVersion": "v1", "kind": "Secret", "metadata": meta(chain.PullSecret),
				"type": "kubernetes.io/dockerconfigjson",
				"data": map[string]any{".dockerconfigjson": base64.StdEncoding.EncodeToString(dockerConfig)},
			}
			ociSpec := map[string]any{
				"interval": chart.Interval,
				"url":      chart.URL(registry, chart.BootstrapRepository(ns, target)),
				"ref":      map[string]any{"semver": ">=0.0.0"},
				"layerSelector": map[string]any{
					"mediaType": chart.LayerMediaType, "operation": "copy",
				},
				"secretRef": map[string]any{"name": chain.PullSecret},
			}
			docs := []any{secret}
			// The bootstrap chart's own OCIRepositories pull from the same
			// registry with the same Secrets.
			registryValues := map[string]any{"pullSecret": chain.PullSecret}
			if caFile != "" {
				pem, err := os.ReadFile(caFile)
				if err != nil {
					return fmt.Errorf("reading --ca-file: %w", err)
				}
				docs = append(docs, map[string]any{
					"apiVersion": "v1", "kind": "Secret", "metadata": meta(chain.CASecret),
					"type": "Opaque", "data": map[string]any{"ca.crt": base64.StdEncoding.EncodeToString(pem)},
				})
				ociSpec["certSecretRef"] = map[string]any{"name": chain.CASecret}
				registryValues["certSecret"] = chain.CASecret
			}
			if plainHTTP {
				ociSpec["insecure"] = true
				registryValues["insecure"] = true
			}
			docs = append(docs,
				map[string]any{
					"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
					"metadata": meta(chain.Bootstrap), "spec": ociSpec,
				},
				map[string]any{
					"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
					"metadata": meta(chain.Bootstrap),
					"spec": map[string]any{
						"interval":       chart.Interval,
						"chartRef":       map[string]any{"kind": "OCIRepository", "name": chain.Bootstrap},
						"install":        map[string]any{"remediation": map[string]any{"retries": 3}},
						"upgrade":        map[string]any{"remediation": map[string]any{"retries": 3}},
						"test":           map[string]any{"enable": true},
						"driftDetection": map[string]any{"mode": "enabled"},
						"values":         map[string]any{"registry": registryValues},
					},
				})
			fmt.Fprintf(g.stdout, "# What the cluster of Target %s/%s needs once: kubectl apply -f this file.\n", ns, target)
			if placeholder {
				fmt.Fprintf(g.stdout, "# PLACEHOLDER: the pull Secret below holds no real credentials. Replace the\n"+
					"# username and password in its .dockerconfigjson (base64) for %s, or rerun with\n"+
					"# --username and --password-stdin.\n", host)
			}
			for _, d := range docs {
				b, err := yaml.Marshal(d)
				if err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "---\n%s", b)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&registry, "registry", "", "registry solar publishes to: HOST[:PORT][/PREFIX] (required)")
	fl.StringVar(&username, "username", "", "user name the cluster pulls with (with --password-stdin)")
	fl.BoolVar(&passwordStdin, "password-stdin", false, "read the pull password from stdin")
	fl.StringVar(&caFile, "ca-file", "", "PEM file of the registry's CA, put into Secret solar-bootstrap-ca")
	fl.BoolVar(&plainHTTP, "plain-http", false, "the registry speaks plain HTTP (development only)")
	fl.StringVar(&fluxNS, "flux-namespace", "flux-system", "namespace of Flux and of the objects printed")
	return cmd
}
