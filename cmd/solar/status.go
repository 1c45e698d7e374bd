package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/diag"
	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/status"
)

const statusLong = `status compares, per Target of PATH (of -n, of --target, matching -l), what
solar published with what the Target's cluster runs: the newest bootstrap chart
in the store (--registry or --out), the release chart versions it names and
their manifest digests, beside the TargetReport the Target's solar-agent
writes into the SolAr API server (--kubeconfig): per release the version the
cluster runs, Flux's phase (Pending, Progressing, Ready, Degraded, Failed)
and the failing condition's message.

A Target is Converged when every release is Ready at the version published
and, where the cluster reports a digest (helm-controller appends the first 12
hex digits of the manifest it pulled: 0.0.1+68ee5879e98f), from the very
artifact published; Progressing while Flux is on its way, or while a release
runs the published version from another artifact (a tag re-pointed or rolled
back: the message names both digests), or while helm-controller will try a
failed release again (the message starts "retrying:"); Failed when a release
is Failed (retries spent) or Degraded with no retry coming; Stale when its report is older than --max-age (the agent writes at
least that often, so it has stopped); Unknown when nothing was published
for it or its agent has not reported.

With --reports DIR, the folder solar import-reports keeps, a Target a site's
report archive reports is compared with that report (its age judged at the
time the archive left the site, the message saying so), any other with its
TargetReport in the API server (--kubeconfig; without one, it has no report).

--watch asks again every --interval while a Target is Progressing.
--exit-code exits 0 when every Target converged, 2 while one is
progressing, 1 when one failed, is stale or unknown: a CI job can wait for
a rollout with --watch --exit-code.`

func newStatusCmd(g *globals) *cobra.Command {
	var lf loadFlags
	var sel selectFlags
	var rf registryFlags
	var out, target, kubeconfig, reports string
	var maxAge, interval time.Duration
	var watch, exitCode bool
	cmd := &cobra.Command{
		Use:   "status PATH... (--registry HOST[:PORT][/PREFIX] | --out DIR) --kubeconfig FILE",
		Short: "Compare what solar published with what each Target's cluster runs",
		Long:  statusLong,
		Example: `  solar status examples/ --registry registry.example.com/solar --kubeconfig solar.yaml
  solar status examples/ -n alpha --target edge-1 --registry registry.example.com/solar -o json
  solar status examples/ --registry registry.example.com/solar --watch --exit-code   # wait for a rollout
  solar status examples/ -l site=north --registry registry.example.com/solar        # the Targets whose labels match
  solar status examples/ -A --registry registry.example.com/solar                   # every namespace, as without -n`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.orOut(out); err != nil {
				return err
			}
			if kubeconfig == "" && reports == "" {
				return fmt.Errorf("--kubeconfig is required (or $KUBECONFIG): the SolAr API server the agents report to; or --reports, the reports solar import-reports keeps")
			}
			opts, err := lf.options(g, cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			opts.Target = target
			if err := sel.apply(g, &opts); err != nil {
				return err
			}
			targets, problems, err := pipeline.StatusTargets(opts)
			if problems.HasErrors() {
				return g.printStatusProblems(problems)
			}
			if err != nil {
				return err
			}
			store, err := rf.readStore(cmd.Context(), out, true, cmd.InOrStdin())
			if err != nil {
				return g.storeError(err, "compare with", out, rf.registry)
			}
			defer store.Close()
			so := status.Options{Kubeconfig: kubeconfig, MaxAge: maxAge, WrapTransport: g.requestLog()}
			if so.Imported, err = importedReports(reports); err != nil {
				return err
			}
			code, err := status.Watch(cmd.Context(), targets, store.Store, so, watch, interval, g.printTargetStatus)
			if err != nil {
				return hint(err, rf.registry)
			}
			if exitCode && code != 0 {
				return exitError{code: code}
			}
			return nil
		},
	}
	lf.register(cmd)
	sel.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&out, "out", "", "directory of the OCI image layout to compare with")
	rf.registerClient(g, fl, "to compare with")
	fl.StringVar(&target, "target", "", "the Target of this name only (with -n, of that namespace)")
	fl.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), requiredKubeconfig("the SolAr API server the agents report to"))
	fl.StringVar(&reports, "reports", "", reportsFlagHelp)
	fl.DurationVar(&maxAge, "max-age", status.DefaultMaxAge, "a report older than this is stale (solar-agent's --max-age)")
	fl.BoolVar(&watch, "watch", false, "ask again every --interval while a Target is progressing")
	fl.DurationVar(&interval, "interval", 5*time.Second, "time between two looks with --watch")
	fl.BoolVar(&exitCode, "exit-code", false, "exit 0 when converged, 2 while progressing, 1 when failed, stale or unknown")
	return listOutputs(cmd, "name")
}

// printStatusProblems prints what makes the input invalid and fails.
func (g *globals) printStatusProblems(problems diag.List) error {
	if g.structured() {
		if err := g.printData(map[string]any{"targets": []any{}, "problems": problems}); err != nil {
			return err
		}
	} else {
		for _, p := range problems {
			fmt.Fprintln(g.stderr, p)
		}
	}
	return exitError{code: 1}
}

// printTargetStatus prints one row per release of each Target (one for a
// Target without), or one JSON/YAML document {"targets": [...]}.
func (g *globals) printTargetStatus(st []status.Target) error {
	if g.structured() {
		return g.printData(map[string]any{"targets": st, "problems": []any{}})
	}
	if g.output == "name" {
		for _, s := range st {
			fmt.Fprintf(g.stdout, "%s/%s\n", s.Namespace, s.Name)
		}
		return nil
	}
	w := newTable(g.stdout)
	g.header(w, "NAMESPACE\tTARGET\tSTATE\tBOOTSTRAP\tREPORT-AGE\tRELEASE\tDESIRED\tRUNNING\tPHASE\tMESSAGE")
	now := time.Now()
	for _, s := range st {
		reported := "-"
		if s.LastReportTime != nil {
			reported = age(*s.LastReportTime, now)
		}
		if len(s.Releases) == 0 {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t-\t-\t-\t-\t%s\n", s.Namespace, s.Name, s.State, dash(s.Bootstrap), reported, cell(s.Message, 80))
			continue
		}
		for _, r := range s.Releases {
			msg := r.Message
			if msg == "" && r.Reported == "" {
				msg = s.Message
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Namespace, s.Name, s.State, dash(s.Bootstrap), reported,
				r.Release, r.Desired, cell(r.Reported, 20), cell(r.Phase, 12), cell(msg, 80))
		}
	}
	return w.Flush()
}

// cell is a table cell of what a cluster reported: "-" when empty, else
// printable and cut to n characters.
func cell(s string, n int) string {
	if s == "" {
		return "-"
	}
	return cut(printable(s), n)
}
