package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/internal/english"
	"github.com/solar-pipeline/solar/renderer/pipeline"
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
chart. It is written whole or not at all, mode 0600.

With --nats (or $NATS_URL) and the login flags of solar fleet status, the
archive also carries the state of every device the fleet's bucket (--bucket)
knows, as fleet status shows it: its current attempt (UUID, target version,
when written), the state it reported (state, step, version, reason, the agent
version that runs on it, when), or why they could not be read; reasons are cut
at 1024 bytes, and nothing else of the attempt (its artifact's URL) is
carried. Without --nats it carries no device state, and says so in its header
and on stderr; that is no error.

With --registry HOST[/PREFIX] (and --username, --password-stdin, --ca-file,
--plain-http, --insecure-skip-tls-verify as other commands take them), it
also lists what the site's registry holds under the prefix: every repository
(the registry's catalog API, GET /v2/_catalog, paginated), each tag and the
digest of its manifest, as pushed: [{repository, tag, digest}], the
repository as HOST/PATH. At most 100000 tags, in at most 10 minutes; a
registry that does not serve the catalog API is an error naming it. On the
connected side, the newest archive's list replaces the older one, and an
archive without a list keeps it: what the site confirmed, which an export
relative to it leaves out.`

func newExportReportsCmd(g *globals) *cobra.Command {
	var sf signFlags
	var nf natsFlags
	var rf registryFlags
	var out, site, kubeconfig string
	cmd := &cobra.Command{
		Use:   "export-reports --site NAME --signing-key KEY --out FILE --kubeconfig FILE [--nats URL] [--registry HOST[/PREFIX]]",
		Short: "Write a site's TargetReports as one signed archive, to carry out of an air gap",
		Long:  exportReportsLong,
		Example: `  solar export-reports --site north --signing-key site.key --out reports.tar --kubeconfig site.yaml
  solar export-reports --site north --signing-key site.key --out reports.tar --kubeconfig site.yaml \
      --nats nats://127.0.0.1:4222 --registry registry.north.example/solar
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
			c, err := siteContents(cmd, g, &nf, &rf, reports)
			if err != nil {
				return err
			}
			s, err := sitereport.Export(cmd.Context(), c, site, key, time.Now(), out)
			if err != nil {
				return err
			}
			if g.structured() {
				return g.printData(s)
			}
			for _, t := range s.Targets {
				fmt.Fprintln(g.stdout, t)
			}
			g.say("wrote %s: %s, %s, %s of site %s, exported at %s, %s, %s", out, english.Count(len(s.Targets), "report"),
				devicesCount(s.Fleet, s.Devices), pushedCount(s.Registry, s.Pushed), site,
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
	nf.register(fl)
	fl.Lookup("nats").Usage = "the site's NATS server URLs, comma-separated (default $NATS_URL): the archive carries the state of every device of the fleet's bucket; none without it"
	rf.registerClient(g, fl, "of the site, whose every repository under PREFIX, tag and manifest digest the archive lists (none without it)")
	return listOutputs(cmd, "name")
}

// siteContents are the reports, and what the flags say to read besides
// them: the devices of the fleet's bucket (--nats), the tags of the
// site's registry (--registry).
func siteContents(cmd *cobra.Command, g *globals, nf *natsFlags, rf *registryFlags, reports []sitereport.Report) (sitereport.Contents, error) {
	c := sitereport.Contents{Reports: reports}
	if nf.server == "" {
		g.say("no --nats (nor $NATS_URL): the archive carries no device states")
	} else {
		st, err := pipeline.FleetStatus(cmd.Context(), nf.nats(g))
		if err != nil {
			return c, fmt.Errorf("reading the device states: %w", err)
		}
		c.Fleet, c.Devices = nf.bucket, sitereport.DevicesOf(st)
	}
	if rf.registry == "" {
		return c, nil
	}
	s, err := rf.remote(cmd.Context(), cmd.InOrStdin())
	if err != nil {
		return c, err
	}
	defer s.Close()
	c.Registry = s.Registry
	c.Pushed, err = sitereport.ListPushed(cmd.Context(), s.Remote, s.Registry)
	return c, err
}

// devicesCount says how many device states an archive carries, or that it
// carries none.
func devicesCount(fleet string, n int) string {
	if fleet == "" {
		return "no device states (the site's fleet was not read: no --nats)"
	}
	return english.Count(n, "device state") + " of bucket " + fleet
}

// pushedCount says how many tags of which registry an archive lists.
func pushedCount(registry string, n int) string {
	if registry == "" {
		return "no registry listed"
	}
	return english.Count(n, "tag") + " of " + registry
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

The archive's device states (export-reports --nats) are kept with the
reports, replaced by the next archive's; its list of what the site's
registry holds (export-reports --registry) too, except that an archive
without a list keeps the last one. stderr says how many of each came in.

solar fleet status --reports DIR shows the device states, marked "via the
archive of site S, exported at T". solar status --reports DIR and solar
rollout --reports DIR read the folder's reports:
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
					"manifest": imp.Manifest, "targets": targetsOf(imp), "fleet": imp.Fleet, "devices": len(imp.Devices),
					"registry": imp.Registry, "pushed": len(imp.Pushed), "pushedAt": imp.PushedAt})
			}
			for _, t := range targetsOf(imp) {
				fmt.Fprintln(g.stdout, t)
			}
			pushed := pushedCount(imp.Registry, len(imp.Pushed))
			if imp.Registry != "" && !imp.PushedAt.Equal(imp.ExportedAt) {
				pushed += " (kept: listed by the archive exported at " + imp.PushedAt.Format(time.RFC3339) + ")"
			}
			g.say("imported %s, %s, %s of site %s, exported at %s, into %s", english.Count(len(imp.Reports), "report"),
				devicesCount(imp.Fleet, len(imp.Devices)), pushed, imp.Site, imp.ExportedAt.Format(time.RFC3339), into)
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

// importedDevicesHelp is the help of fleet status --reports.
const importedDevicesHelp = "show the device states solar import-reports imported into this folder from sites' report archives, each marked with its site and when its archive left it, instead of reading the bucket (no --nats needed)"

// printImportedDevices prints the device states imported into dir (those
// of ids, or all) as fleet status prints the bucket's, each marked "via
// the archive of site S, exported at T"; an id none of them has fails the
// run, the others shown.
func (g *globals) printImportedDevices(dir string, ids []string) error {
	rs, err := sitereport.Open(dir)
	if err != nil {
		return err
	}
	all := rs.Devices()
	var shown []sitereport.SiteDevice
	var notFound []string
	for _, id := range ids {
		n := len(shown)
		for _, d := range all {
			if d.ID == id {
				shown = append(shown, d)
			}
		}
		if len(shown) == n {
			notFound = append(notFound, id)
		}
	}
	if len(ids) == 0 {
		shown = all
	}
	switch g.output {
	case "json", "yaml":
		err = g.printData(map[string]any{"devices": orEmpty(shown), "notFound": orEmpty(notFound)})
	case "name":
		for _, d := range shown {
			fmt.Fprintln(g.stdout, d.ID)
		}
	default:
		err = g.importedDevicesTable(shown, time.Now())
	}
	if err == nil && len(notFound) > 0 {
		err = fmt.Errorf("not found in the device states imported into %s: %s", dir, strings.Join(notFound, ", "))
	}
	return err
}

// importedDevicesTable is fleet status's table of the devices, with VIA
// last: the archive each came through.
func (g *globals) importedDevicesTable(ds []sitereport.SiteDevice, now time.Time) error {
	if len(ds) == 0 {
		return nil
	}
	out := bufio.NewWriter(g.stdout)
	w := newTable(out)
	g.header(w, strings.Join(append(slices.Clone(statusHeader), "VIA"), "\t"))
	for _, d := range ds {
		via := "the archive of site " + d.Site + ", exported at " + d.ExportedAt.UTC().Format(time.RFC3339)
		fmt.Fprintln(w, strings.Join(append(statusRow(d.Status(), now), via), "\t"))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return out.Flush()
}
