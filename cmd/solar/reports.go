package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/sitereport"
)

const exportReportsLong = `export-reports runs on an air-gapped site: it writes the site's TargetReports
(those of -n, else of every namespace), read from the site's SolAr API server
(--kubeconfig), into one archive file signed with the site's key, to carry out
of the air gap; on the connected side, solar import-reports FILE checks it.

The file is an archive of solar export (a tar of an OCI image layout, read by
push and import-reports with the same bounded checks) that holds one
repository, solar-reports/<site>, at one version: its config names the site
and when the archive was written (the export time, which import-reports
requires to grow from one archive to the next), its layers are the reports,
one each (apiVersion, kind, namespace, name and spec: a TargetReport holds no
Secret and no token), and its signature is the site's key's, as solar signs a
chart. It is written whole or not at all, mode 0600.`

func newExportReportsCmd(g *globals) *cobra.Command {
	var sf signFlags
	var out, site, kubeconfig string
	cmd := &cobra.Command{
		Use:   "export-reports --site NAME --signing-key KEY --out FILE --kubeconfig FILE",
		Short: "Write a site's TargetReports as one signed archive, to carry out of an air gap",
		Long:  exportReportsLong,
		Example: `  solar export-reports --site north --signing-key site.key --out reports.tar --kubeconfig site.yaml
  solar import-reports reports.tar --key site.pub --into reports/   # on the connected side`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case out == "":
				return errors.New("--out FILE is required: the archive to write")
			case site == "":
				return errors.New("--site NAME is required: the site the reports come from")
			case kubeconfig == "":
				return errors.New("--kubeconfig is required (or $KUBECONFIG): the site's SolAr API server the agents report to")
			}
			key, err := sf.key(g)
			if err != nil {
				return err
			}
			if key == nil {
				return fmt.Errorf("--signing-key is required (or $%s): the site's key, whose public key import-reports verifies", signingKeyEnv)
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("reading the kubeconfig %s: %w", kubeconfig, err)
			}
			cfg.Wrap(g.requestLog())
			var namespaces []string
			if g.namespace != "" {
				namespaces = []string{g.namespace}
			}
			reports, err := sitereport.List(cmd.Context(), cfg, namespaces)
			if err != nil {
				return err
			}
			s, err := sitereport.Export(cmd.Context(), reports, site, key, time.Now(), out)
			if err != nil {
				return err
			}
			if g.structured() {
				return g.printData(s)
			}
			for _, t := range s.Targets {
				fmt.Fprintln(g.stdout, t)
			}
			g.say("wrote %s: %s of site %s, exported at %s, %s, %s", out, english.Count(len(s.Targets), "report"), site,
				s.ExportedAt.Format(time.RFC3339), bytesHuman(s.Size), s.SHA256)
			return nil
		},
	}
	fl := cmd.Flags()
	sf.register(fl)
	fl.Lookup("signing-key").Usage = "the site's private key the archive is signed with (required): as publish --signing-key takes it (cosign generate-key-pair's, its password in $" +
		keyPasswordEnv + ", or an Ed25519 or ECDSA P-256 PEM key); default: the PEM in $" + signingKeyEnv + ", if set"
	fl.StringVar(&out, "out", "", "the archive file to write (replaced whole)")
	fl.StringVar(&site, "site", "", "the site's name, a DNS label: import-reports keeps each site's reports apart")
	fl.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), requiredKubeconfig("the site's SolAr API server the agents report to"))
	return listOutputs(cmd, "name")
}

const importReportsLong = `import-reports runs on the connected side: it reads a report archive of
solar export-reports, bounded and checked as solar push checks an archive
(links, other files, a blob whose sha256 is not its name, index.json and
solar-export.json that disagree: refused), verifies its signature with the
site's public key (--key), refuses an archive not exported after the last one
imported from its site (a replay, or an older archive), reads every report
strictly, and names every problem at once. Only then does it write the site's
reports into the folder --into (<site>.json, 0600, replaced whole, with when
the archive left the site and when it came in); on any refusal nothing is
written and the exit code is 1.

solar status --reports DIR and solar rollout --reports DIR read the folder:
each Target the archive reports is compared as if its agent had written its
TargetReport to the API server, marked "reported via the archive of site S,
exported at T", its age judged at T.`

func newImportReportsCmd(g *globals) *cobra.Command {
	var keys []string
	var into string
	cmd := &cobra.Command{
		Use:   "import-reports FILE --key PUBLIC-KEY --into DIR",
		Short: "Verify a site's report archive (solar export-reports) and keep its reports for solar status and rollout",
		Long:  importReportsLong,
		Example: `  solar import-reports reports.tar --key site.pub --into reports/
  solar status examples/ --registry registry.example.com/solar --reports reports/`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if into == "" {
				return errors.New("--into DIR is required: the folder that keeps the imported reports")
			}
			if len(keys) == 0 {
				return errors.New("--key is required: the site's public key (PEM), which signed the archive")
			}
			v, err := verifier(keys)
			if err != nil {
				return err
			}
			imp, err := sitereport.Import(cmd.Context(), args[0], v, into, time.Now())
			if err != nil {
				return err
			}
			if g.structured() {
				return g.printData(map[string]any{"site": imp.Site, "exportedAt": imp.ExportedAt, "importedAt": imp.ImportedAt,
					"manifest": imp.Manifest, "targets": targetsOf(imp)})
			}
			for _, t := range targetsOf(imp) {
				fmt.Fprintln(g.stdout, t)
			}
			g.say("imported %s of site %s, exported at %s, into %s", english.Count(len(imp.Reports), "report"), imp.Site,
				imp.ExportedAt.Format(time.RFC3339), into)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&keys, "key", nil, "the site's public key (PEM) the archive must be signed with; repeatable: any of the keys")
	fl.StringVar(&into, "into", "", "the folder that keeps the imported reports, one file per site")
	return listOutputs(cmd, "name")
}

// reportsFlagHelp is the help of --reports of status and rollout.
const reportsFlagHelp = "the folder of the TargetReports solar import-reports imported from sites' report archives: a Target they report is read there, any other from the API server"

// importedReports is the reader of the reports imported into dir (nil
// for no dir).
func importedReports(dir string) (func(context.Context, string, string) (*unstructured.Unstructured, error), error) {
	if dir == "" {
		return nil, nil
	}
	rs, err := sitereport.Open(dir)
	if err != nil {
		return nil, err
	}
	return rs.Report, nil
}

// targetsOf lists the Targets of an import, <namespace>/<name>.
func targetsOf(imp *sitereport.Imported) []string {
	out := []string{}
	for _, r := range imp.Reports {
		out = append(out, r.Metadata.Namespace+"/"+r.Metadata.Name)
	}
	return out
}
