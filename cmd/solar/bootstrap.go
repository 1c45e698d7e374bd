package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/chart"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/published"
)

func newBootstrapCmd(g *globals) *cobra.Command {
	var rf registryFlags
	var fluxNS string
	var verifyKeys []string
	cmd := &cobra.Command{
		Use:   "bootstrap-manifests TARGET [PATH...] --registry HOST[:PORT][/PREFIX] [-n NS]",
		Short: "Print what a Target's cluster needs once to pull its bootstrap chart",
		Long: `bootstrap-manifests prints, as YAML for kubectl apply, what a Target's cluster
needs once so that Flux pulls everything else solar publishes for it:
  - Secret solar-bootstrap-pull (kubernetes.io/dockerconfigjson): the registry
    credentials from --username/--password-stdin, else a clearly marked
    placeholder to fill in;
  - Secret solar-bootstrap-ca, with --ca-file: the CA of the registry;
  - Secret solar-bootstrap-cosign, with --verify-key: the public keys (only
    those) that Flux verifies solar's signed charts with; the OCIRepositories
    of the bootstrap chart and of the release charts it names then carry
    spec.verify (provider cosign), and Flux refuses a chart that no key
    verifies. Give two keys while a new signing key takes over;
  - OCIRepository solar-bootstrap: oci://<registry>/<ns>/bootstrap-<target>,
    the highest version (semver >=0.0.0), Helm chart layer;
  - HelmRelease solar-bootstrap of that chart (no readiness wait: it holds
    only Flux objects; remediation retries 3, tests, drift detection), with
    values that make the chart's own OCIRepositories use the same Secrets.
    Its HelmReleases, solar-bootstrap-<uniqueName>, install the release
    charts (no wait either); theirs, <target>-<uniqueName>, the applications
    (they wait; docs/architecture.md says why).
The objects go to the Flux namespace (--flux-namespace, default flux-system).
The Target must exist: with PATHs, it must be one of their objects; without,
the registry must hold its bootstrap chart (solar publish made it), asked with
the credentials given. Which of the two was checked is said on stderr.
-o json prints a List.`,
		Example: `  solar bootstrap-manifests edge-1 -n alpha --registry registry.example.com/solar | kubectl apply -f -
  echo "$PULL_TOKEN" | solar bootstrap-manifests edge-1 -n alpha --registry 127.0.0.1:5000 \
      --username edge-1 --password-stdin --ca-file ca.pem > edge-1.yaml
  solar bootstrap-manifests plant-1 examples/ -n beta --registry registry.example.com/solar -o json
  solar bootstrap-manifests edge-1 -n alpha --registry registry.example.com/solar --verify-key solar.pub`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ns := cmp.Or(g.namespace, "default")
			if err := checkBootstrapTarget(g, ns, fluxNS, args); err != nil {
				return err
			}
			l, err := rf.read(cmd.InOrStdin())
			if err != nil {
				return err
			}
			if len(args) == 1 {
				if err := g.checkPublished(cmd.Context(), &rf, l, ns, args[0]); err != nil {
					return err
				}
			}
			target := args[0]
			fc := chart.FirstContact{Target: target, Namespace: ns, Host: l.host, Prefix: l.prefix, FluxNamespace: fluxNS,
				Username: rf.username, Password: l.password, PlainHTTP: rf.plainHTTP}
			if rf.caFile != "" {
				if fc.CA, err = os.ReadFile(rf.caFile); err != nil {
					return fmt.Errorf("reading --ca-file: %w", err)
				}
			}
			if fc.VerifyKeys, err = readPublicKeys(verifyKeys); err != nil {
				return err
			}
			docs, err := chart.Manifests(fc)
			if err != nil {
				return err
			}
			return printManifests(g, docs, ns, target, l.host, rf.passwordStdin)
		},
	}
	fl := cmd.Flags()
	rf.register(g, fl, "solar publishes to")
	fl.StringVar(&fluxNS, "flux-namespace", "flux-system", "namespace of Flux and of the objects printed")
	fl.StringArrayVar(&verifyKeys, "verify-key", nil, "public key (PEM) Flux verifies the charts with (publish --signing-key signed them); repeatable, for a key rotation")
	return cmd
}

// checkBootstrapTarget checks the names and, with PATHs (args[1:]), that the
// Target is one of their objects.
func checkBootstrapTarget(g *globals, ns, fluxNS string, args []string) error {
	for _, f := range [][2]string{{"TARGET", args[0]}, {"-n", ns}, {"--flux-namespace", fluxNS}} {
		if errs := validation.IsDNS1123Label(f[1]); len(errs) > 0 {
			return fmt.Errorf("invalid %s %q: %s", f[0], f[1], strings.Join(errs, "; "))
		}
	}
	if len(args) == 1 {
		return nil
	}
	set, problems, err := pipeline.Load(pipeline.Options{LoadOptions: pipeline.LoadOptions{Paths: args[1:], Namespace: g.namespace}, Log: g.log})
	if err != nil {
		return err
	}
	if set == nil {
		if err := g.printReport(pipeline.NewReport(&pipeline.Plan{Problems: problems}), chartsTable); err != nil {
			return err
		}
		return exitError{code: 1}
	}
	if !pipeline.HasTarget(set, ns, args[0]) {
		return fmt.Errorf("no Target %s/%s in %s%s", ns, args[0], strings.Join(args[1:], " "), elsewhere(args[0], pipeline.TargetNamespaces(set, args[0])))
	}
	g.say("Target %s/%s: found in %s", ns, args[0], strings.Join(args[1:], " "))
	return nil
}

// checkPublished checks, without PATHs, that the registry holds the bootstrap
// chart of the Target: manifests for a Target that exists nowhere pull
// nothing.
func (g *globals) checkPublished(ctx context.Context, rf *registryFlags, l login, ns, target string) error {
	r, err := pipeline.OpenStore(ctx, pipeline.StoreOptions{Registry: rf.options(l)})
	if err != nil {
		return err
	}
	where := path.Join(l.host, l.prefix, pipeline.BootstrapRepository(ns, target))
	instead := "; or pass the PATHs of the objects to check the Target against them instead"
	tags, err := published.BootstrapVersions(ctx, r.Store, ns, target)
	if err != nil {
		return fmt.Errorf("checking that Target %s/%s is published: %w%s", ns, target, hint(err, rf.registry), instead)
	}
	if len(tags) == 0 {
		// Best effort: a registry may not list its catalog.
		namespaces, _ := pipeline.PublishedNamespaces(ctx, r, target)
		if hint := elsewhere(target, namespaces); hint != "" {
			return fmt.Errorf("no Target %s/%s: %s holds no bootstrap chart%s", ns, target, where, hint)
		}
		return fmt.Errorf("no Target %s/%s: %s holds no bootstrap chart (publish it first, check TARGET and -n)%s", ns, target, where, instead)
	}
	g.say("Target %s/%s: its bootstrap chart is in %s (%s)", ns, target, where, english.Count(len(tags), "version"))
	return nil
}

// elsewhere says in which other namespaces a Target called target is, for
// a TARGET not found in the namespace of -n (often none given): "" when
// none.
func elsewhere(target string, namespaces []string) string {
	switch len(namespaces) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("; %s exists in namespace %s (pass -n %s)", target, namespaces[0], namespaces[0])
	}
	return fmt.Sprintf("; %s exists in namespaces %s (pass -n with one of them)", target, strings.Join(namespaces, ", "))
}

// printManifests prints the first-contact objects: a List with -o json|yaml,
// else a YAML stream for kubectl apply, with a warning when the pull Secret
// holds a placeholder.
func printManifests(g *globals, docs []map[string]any, ns, target, host string, credentials bool) error {
	if g.output != "text" {
		items := make([]any, len(docs))
		for i, d := range docs {
			items[i] = d
		}
		return g.printData(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	}
	fmt.Fprintf(g.stdout, "# What the cluster of Target %s/%s needs once: kubectl apply -f this file.\n", ns, target)
	if !credentials {
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
}
