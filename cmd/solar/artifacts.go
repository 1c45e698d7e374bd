package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/artifacts"
	"github.com/solar-pipeline/solar/renderer/objdiff"
	"github.com/solar-pipeline/solar/renderer/pipeline"
)

const artifactsLong = `artifacts lists every OCI artifact the chain of each Target needs, each once,
with the Targets that need it: what a site must hold before Flux can install
anything there (an air-gapped site's registry, a mirror's allow list).

  bootstrap-chart  the Target's bootstrap chart (level 1)
  release-chart    the release charts its HelmReleases install (level 2)
  chart            the application charts those install (level 3), at the
                   tag (or digest) their OCIRepository names
  image            the container images the application charts' workloads
                   name (containers, initContainers, ephemeralContainers of
                   Pods, Deployments, StatefulSets, DaemonSets, ReplicaSets,
                   Jobs, CronJobs), as written

The charts are rendered as render would render them and as Flux installs
them, with Helm's engine (as diff renders them). Solar's charts are compared
with the store (--out, or --registry; neither: an empty one): a chart the
store holds unchanged is listed at its version with its digest, one that a
publish would still write by its repository alone. An application chart is
read anonymously from its registry, as an OCIRepository without secretRef is,
and listed with its manifest digest; --no-app-charts reads none (no network):
they are listed by tag without digest, and their images are not listed. An
image's digest is shown where its reference carries one.

With a mirror (the PipelineConfig's spec.registries.mirror: an air-gapped
site's registry), the rendered charts point the Targets at the site's copies
of the application charts; artifacts still reads and lists them by their
source reference, and gives each application chart and image its "site"
reference (-o json, yaml; the SITE column of -o wide): where solar push puts
it, HOSTNAME/PATH/SOURCEHOST/SOURCEPATH with the same tag and digest. Solar's
own charts are in the render registry and have none.

Without --kubeconfig, agent Releases are rendered without a token (as with
--no-credentials): the agent chart is listed by its repository. Nothing is
written. Exit code 0: the list; 1: invalid input, an image reference that does
not parse (named with its chart), or nothing found.`

func newArtifactsCmd(g *globals) *cobra.Command {
	var f planFlags
	var rf registryFlags
	var out, fluxNS string
	var noApp bool
	cmd := &cobra.Command{
		Use:   "artifacts PATH...",
		Short: "List the charts and container images each Target's chain needs",
		Long:  artifactsLong,
		Example: `  solar artifacts examples/                          # read application charts from their registries
  solar artifacts --no-app-charts examples/          # offline: Solar's and the application charts by name
  solar artifacts -o json examples/ | jq -r '.artifacts[] | select(.kind == "image") | .reference'
  solar artifacts -o wide --no-app-charts site/        # with a mirror: where each is on the site (SITE)
  solar artifacts -n alpha --target edge-1 --registry registry.example.com/solar examples/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out != "" && rf.registry != "" {
				return fmt.Errorf("give one of --out and --registry, not both")
			}
			f.noCredentials = f.noCredentials || f.kubeconfig == ""
			list, err := listArtifacts(cmd, g, &f, &rf, out, pipeline.ArtifactOptions{FluxNamespace: fluxNS}, !noApp, args)
			if err != nil {
				return err
			}
			return g.printArtifacts(list)
		},
	}
	f.register(cmd)
	f.selectFlags.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "directory of the OCI image layout to compare Solar's charts with (default: none, an empty store)")
	rf.registerClient(g, fl, "to compare Solar's charts with, and where the bootstrap charts point")
	fl.BoolVar(&noApp, "no-app-charts", false, "do not read application charts from their registries: list them by tag, without digest or images")
	fl.StringVar(&fluxNS, "flux-namespace", "flux-system", "namespace of Flux, where the bootstrap chart is installed")
	return listOutputs(cmd, "wide")
}

// listArtifacts lists the artifacts of the Targets of args (solar
// artifacts; export --with-dependencies): Solar's charts compared with the
// layout out or the registry of rf (neither: an empty store), application
// charts read from their registries when app.
func listArtifacts(cmd *cobra.Command, g *globals, f *planFlags, rf *registryFlags, out string, ao pipeline.ArtifactOptions, app bool, args []string) (*artifacts.List, error) {
	f.dryRun = true
	opts, err := f.options(g, cmd.InOrStdin(), args)
	if err != nil {
		return nil, err
	}
	store, done, err := artifactStore(cmd, rf, out)
	if err != nil {
		return nil, err
	}
	defer done()
	if store.Registry != "" {
		opts.Registry = store.Registry
	}
	plan, err := pipeline.NewPlan(cmd.Context(), opts)
	if err != nil {
		return nil, hint(err, rf.registry)
	}
	if app {
		ao.App = &objdiff.Fetcher{Wrap: g.requestLog()}
	}
	list := &artifacts.List{Artifacts: []artifacts.Artifact{}, Problems: pipeline.NewReport(plan).Problems}
	if len(plan.Targets) > 0 {
		if list, err = pipeline.Artifacts(cmd.Context(), plan, store.Store, opts, ao); err != nil {
			return nil, hint(err, rf.registry)
		}
	}
	return list, nil
}

// artifactStore opens the store Solar's charts are compared with: the
// layout out or the registry, read only; neither, an empty layout. done
// closes it.
func artifactStore(cmd *cobra.Command, rf *registryFlags, out string) (*pipeline.Store, func(), error) {
	if out != "" || rf.registry != "" {
		s, err := rf.readStore(cmd.Context(), out, false, cmd.InOrStdin())
		if err != nil {
			return nil, nil, err
		}
		return s, func() { s.Close() }, nil
	}
	dir, err := os.MkdirTemp("", "solar-artifacts-")
	if err != nil {
		return nil, nil, err
	}
	// A read-only layout of a folder that does not exist holds nothing.
	s, err := pipeline.OpenStore(context.WithoutCancel(cmd.Context()), pipeline.StoreOptions{Out: filepath.Join(dir, "none"), ReadOnly: true})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return s, func() { s.Close(); os.RemoveAll(dir) }, nil
}

// printArtifacts writes the list: a table (KIND, REFERENCE, DIGEST,
// TARGETS; -o wide: SITE after REFERENCE) on stdout, notes, problems and a
// summary on stderr; with -o json or yaml, one document. An error of the
// input, or an empty list, exits 1.
func (g *globals) printArtifacts(l *artifacts.List) error {
	var err error
	if l.Problems.HasErrors() {
		err = exitError{code: 1}
	} else if len(l.Artifacts) == 0 {
		err = fmt.Errorf("no artifacts: no Target in the input (check -n, --target and -l)")
	}
	wide := g.output == "wide"
	if g.output != "text" && !wide {
		if perr := g.printData(l); perr != nil {
			return perr
		}
		if err != nil {
			return reported{err}
		}
		return nil
	}
	if len(l.Artifacts) > 0 {
		w := newTable(g.stdout)
		if wide {
			g.header(w, "KIND\tREFERENCE\tSITE\tDIGEST\tTARGETS")
		} else {
			g.header(w, "KIND\tREFERENCE\tDIGEST\tTARGETS")
		}
		for _, a := range l.Artifacts {
			site := ""
			if wide {
				site = printable(dash(a.Site)) + "\t"
			}
			fmt.Fprintf(w, "%s\t%s\t%s%s\t%s\n", a.Kind, printable(a.Reference), site, dash(a.Digest), targetsCell(a.Targets))
		}
		w.Flush()
	}
	for _, n := range l.Notes {
		g.say("note: %s", cut(printable(n), 1000))
	}
	g.printProblems(l.Problems)
	if len(l.Artifacts) > 0 {
		g.say("%s, %s, %s, %s", english.Count(l.Count(artifacts.KindBootstrap), "bootstrap chart"),
			english.Count(l.Count(artifacts.KindRelease), "release chart"), english.Count(l.Count(artifacts.KindChart), "application chart"),
			english.Count(l.Count(artifacts.KindImage), "image"))
	}
	return err
}

// targetsCell names up to three Targets, else the first and how many more.
func targetsCell(targets []string) string {
	if len(targets) <= 3 {
		return strings.Join(targets, ",")
	}
	return fmt.Sprintf("%s and %d more", targets[0], len(targets)-1)
}
