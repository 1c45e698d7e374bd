package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/solar-pipeline/solar/renderer/pipeline"
)

func newCredentialsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "credentials",
		Short: "Manage the agent credentials of Targets in the SolAr API server",
		RunE:  commandGroup,
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
which invalidates the tokens at once: that is the operator's decision, not a
failure (exit 0); render and publish then leave that Target's agent release
out, with the reason, until the annotation goes.

The condition AgentCredentialReady (Issued, Disabled, Revoked, MintFailed) is
written to each Target's status in the API server and printed. Tokens are never
printed: only a fingerprint. Running it again changes nothing. solar publish and
render --kubeconfig run the same step first. Exit code 1 when a credential could
not be minted (the others are still synced); a revoked one is not a failure. See docs/credentials.md.`,
		Example: `  solar credentials sync examples/ --kubeconfig ~/.kube/solar.yaml
  solar credentials sync -n alpha -o json examples/ --kubeconfig solar.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.kubeconfig == "" {
				return fmt.Errorf("--kubeconfig is required (or set $KUBECONFIG): the kubeconfig of the SolAr API server to mint the credentials in")
			}
			opts, err := f.options(g, cmd.InOrStdin(), args)
			if err != nil {
				return err
			}
			plan, err := pipeline.NewPlan(cmd.Context(), opts)
			report := pipeline.CredentialReport(plan)
			if err != nil {
				return err
			}
			if err := g.printReport(report, credentialsTable); err != nil {
				return err
			}
			if report.MintFailed() || report.Problems.HasErrors() {
				return exitError{code: 1}
			}
			return nil
		},
	}
	f.registerResolve(sync)
	sync.Flags().Lookup("kubeconfig").Usage = requiredKubeconfig("the SolAr API server to mint the credentials in")
	cmd.AddCommand(listOutputs(sync, "name"))
	return cmd
}
