package main

import (
	"fmt"
	"slices"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/publish"
)

func newCredentialsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "credentials",
		Short: "Manage the agent credentials of Targets in the SolAr API server",
	}
	var f planFlags
	sync := &cobra.Command{
		Use:   "sync PATH... --kubeconfig FILE",
		Short: "Mint, rotate and revoke the agent credential of every Target that gets the agent",
		Long: `sync ensures, with client-go in the API server of --kubeconfig, for every Target
bound to a Release annotated solar.opendefense.cloud/target-credential: "true":
a ServiceAccount solar-agent-<target>, a Role that can only get/watch its own
Target and get/update/patch its own TargetReport, a RoleBinding, an empty
TargetReport, and a token (TokenRequest, PipelineConfig spec.agent.tokenTTL)
bound to a Secret holding it. A token with less than a third of its lifetime
left is replaced; the old one stays valid until it expires. A Target annotated
solar.opendefense.cloud/agent-credential: revoked has its token Secrets deleted,
which invalidates the tokens at once.

The condition AgentCredentialReady (Issued, Disabled, Revoked, MintFailed) is
written to each Target's status in the API server and printed. Tokens are never
printed: only a fingerprint. Running it again changes nothing. solar publish and
render --kubeconfig run the same step first. Exit code 1 when a credential could
not be minted (the others are still synced). See docs/credentials.md.`,
		Example: `  solar credentials sync examples/ --kubeconfig ~/.kube/solar.yaml
  solar credentials sync -n alpha -o json examples/ --kubeconfig pipeline.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := g.checkOutput(); err != nil {
				return err
			}
			if f.kubeconfig == "" {
				return fmt.Errorf("--kubeconfig is required: the SolAr API server to mint credentials in")
			}
			plan, creds, problems, err := g.plan(cmd.Context(), args, f)
			report := &publish.Report{Targets: []publish.TargetReport{}, Problems: problems}
			if plan != nil {
				for _, t := range plan.Targets {
					if cred := creds[t.Target.Namespace+"/"+t.Target.Name]; cred != nil {
						report.Targets = append(report.Targets, publish.TargetReport{
							Namespace: t.Target.Namespace, Name: t.Target.Name, Credential: cred,
							Releases: []publish.ReleaseReport{}, Excluded: []publish.ExcludedReport{},
						})
					}
					report.Problems = append(report.Problems, t.Problems...)
				}
				report.Problems = report.Problems.Sorted()
			}
			if err != nil {
				return err
			}
			if g.output == "json" {
				err = writeJSON(g.stdout, report)
			} else {
				w := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "TARGET\tSTATUS\tREASON\tMESSAGE")
				for _, t := range report.Targets {
					fmt.Fprintf(w, "%s/%s\t%s\t%s\t%s\n", t.Namespace, t.Name, t.Credential.Status, t.Credential.Reason, t.Credential.Message)
				}
				err = w.Flush()
				for _, p := range report.Problems {
					fmt.Fprintln(g.stdout, p)
				}
			}
			if err != nil {
				return err
			}
			failed := slices.ContainsFunc(report.Targets, func(t publish.TargetReport) bool {
				return t.Credential.Reason == credential.ReasonMintFailed
			})
			if failed || report.Problems.HasErrors() {
				return exitError{code: 1}
			}
			return nil
		},
	}
	f.register(sync)
	cmd.AddCommand(sync)
	return cmd
}
