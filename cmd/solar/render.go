package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/renderer/chart"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// planFlags are the flags of every command that resolves and renders.
type planFlags struct {
	policyDirs []string
	target     string
	strict     bool
	dryRun     bool
	kubeconfig string
}

func (f *planFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.policyDirs, "policy", nil, "directory of CUE policies (package policy) to add; repeatable")
	cmd.Flags().StringVar(&f.target, "target", "", "work on the Target of this name only (with -n, of that namespace)")
	cmd.Flags().BoolVar(&f.strict, "strict-registry-bindings", false, "make a registry a Target pulls from without a RegistryBinding an error (default: anonymous pulls)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "compute versions and actions against the store, write nothing")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig of the SolAr API server: mint agent credentials there first (docs/credentials.md)")
}

func newRenderCmd(g *globals) *cobra.Command {
	var f planFlags
	var out string
	cmd := &cobra.Command{
		Use:   "render PATH...",
		Short: "Render and package the charts of every Target into an OCI image layout",
		Long: `render validates the objects (as vet does), resolves what every Target gets, and
writes one release chart per Release and one bootstrap-<target> chart per Target
into an OCI image layout (default out/), tagged
  <namespace>/bootstrap-<target>:<version>
  <namespace>/<release-namespace>/release-<release>:<version>
No registry is used (with --kubeconfig, the API server is, to mint agent
credentials first; see solar credentials sync). The layout is the state: a chart whose content equals its
latest version is unchanged and nothing is written; otherwise the next patch
version (0.0.N) is. Packaging is byte-reproducible: the same input gives the same
digests on any machine (tar times come from SOURCE_DATE_EPOCH, else the epoch).

The plan lists per Target its bootstrap chart, its releases and the releases it
does not get, with the reason. Invalid input writes nothing. A Target that does
not resolve is reported and skipped; the others are rendered. Exit code 0:
success; 1: invalid input or a Target failed.`,
		Example: `  solar render examples/
  solar render --dry-run -o json examples/ | jq '.targets[] | {name, action}'
  solar render -n alpha --target edge-1 --out /tmp/layout examples/
  SOURCE_DATE_EPOCH=1700000000 solar render examples/`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.checkOutput(); err != nil {
				return err
			}
			opts, err := packageOptions()
			if err != nil {
				return err
			}
			plan, creds, problems, err := g.plan(cmd.Context(), args, f)
			if err != nil || plan == nil {
				return g.finish(&publish.Report{Targets: []publish.TargetReport{}, Problems: problems}, err)
			}
			store, err := publish.OpenLayout(cmd.Context(), out, f.dryRun)
			if err != nil {
				return err
			}
			report, err := publish.Publish(cmd.Context(), store, plan, publish.Options{
				DryRun: f.dryRun, Package: opts, Progress: g.progress(), Credentials: creds, Log: g.log,
			})
			if err == nil {
				err = store.Save()
			}
			report.Problems = append(problems, report.Problems...).Sorted()
			return g.finish(report, err)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&out, "out", "out", "directory of the OCI image layout")
	return cmd
}

// plan loads, validates and resolves, keeps the Targets -n and --target
// select, and with --kubeconfig syncs their agent credentials. The plan is nil
// when the input is invalid.
func (g *globals) plan(ctx context.Context, paths []string, f planFlags) (*resolve.Plan, map[string]*credential.Credential, diag.List, error) {
	set, problems, err := g.load(paths, f.policyDirs)
	if err != nil || set == nil {
		return nil, nil, problems, err
	}
	plan, err := resolve.Resolve(set, resolve.Options{StrictRegistryBindings: f.strict})
	if err != nil {
		return nil, nil, problems, err
	}
	plan.Targets = slices.DeleteFunc(plan.Targets, func(t *resolve.Target) bool {
		return (g.namespace != "" && t.Target.Namespace != g.namespace) || (f.target != "" && t.Target.Name != f.target)
	})
	if f.target != "" && len(plan.Targets) == 0 {
		return nil, nil, problems, fmt.Errorf("no Target %q%s", f.target, inNamespace(g.namespace))
	}
	opts, err := credential.OptionsFrom(set)
	if err != nil {
		return nil, nil, problems, err
	}
	var minter *credential.Minter
	if f.kubeconfig != "" {
		// A dry run reads the credentials and writes nothing.
		opts.ReadOnly = f.dryRun
		cfg, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
		if err != nil {
			return nil, nil, problems, fmt.Errorf("reading --kubeconfig: %w", err)
		}
		if minter, err = credential.NewMinter(cfg, opts); err != nil {
			return nil, nil, problems, err
		}
	}
	return plan, credential.ForPlan(ctx, minter, opts, plan), problems, nil
}

func inNamespace(ns string) string {
	if ns == "" {
		return ""
	}
	return " in namespace " + ns
}

// packageOptions reads SOURCE_DATE_EPOCH, the reproducible-builds convention
// for the time written into archives.
func packageOptions() (chart.Options, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return chart.Options{}, nil
	}
	sec, err := strconv.ParseInt(v, 10, 64)
	if err != nil || sec < 0 {
		return chart.Options{}, fmt.Errorf("invalid SOURCE_DATE_EPOCH %q: want seconds since 1970 as an integer", v)
	}
	return chart.Options{ModTime: time.Unix(sec, 0)}, nil
}

// finish prints the report (even a partial one, so nothing done goes unsaid)
// and returns the error or exit code it calls for.
func (g *globals) finish(report *publish.Report, err error) error {
	if perr := g.printReport(report); perr != nil && err == nil {
		err = perr
	}
	g.log.Info("plan", summary(report)...)
	if err != nil {
		return err
	}
	if report.Problems.HasErrors() {
		return exitError{code: 1}
	}
	return nil
}

// printReport writes the plan as the JSON document of the CLI contract, or as a
// table followed by the problems.
func (g *globals) printReport(r *publish.Report) error {
	if g.output == "json" {
		return writeJSON(g.stdout, r)
	}
	if len(r.Targets) > 0 {
		w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "TARGET\tCHART\tVERSION\tDIGEST\tACTION")
		for _, t := range r.Targets {
			fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\t%s\n", t.Namespace, t.Name, t.Repository, t.Version, short(t.Digest), t.Action)
			for _, rel := range t.Releases {
				fmt.Fprintf(w, "  %s\t%s\t%s\t%s\t%s\n", rel.Key, rel.Repository, rel.Version, short(rel.Digest), rel.Action)
			}
			for _, e := range t.Excluded {
				fmt.Fprintf(w, "  excluded\t%s\t-\t-\t%s\n", e.Release, e.Reason)
			}
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintln(g.stdout, p)
	}
	return nil
}

// short is the first 12 hex digits of a digest.
func short(d string) string {
	_, hex, _ := strings.Cut(d, ":")
	return hex[:min(12, len(hex))]
}

// summary counts the charts per action, each shared release chart once.
func summary(r *publish.Report) []any {
	counts := map[string]int{}
	seen := map[string]bool{}
	for _, t := range r.Targets {
		counts[t.Action]++
		for _, rel := range t.Releases {
			if !seen[rel.Repository] {
				seen[rel.Repository] = true
				counts[rel.Action]++
			}
		}
	}
	return []any{"targets", len(r.Targets), publish.Create, counts[publish.Create], publish.Update, counts[publish.Update],
		publish.Unchanged, counts[publish.Unchanged]}
}
