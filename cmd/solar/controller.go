package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/controller"
	"github.com/solar-pipeline/solar/renderer/sitereport"
)

// controllerFlags are solar controller's own flags.
type controllerFlags struct {
	concurrent                   int
	interval                     time.Duration
	configNamespace              string
	namespaceSelector            string
	shards                       int
	leaderElect                  bool
	leaderElectionID, leaseNS    string
	leaseDuration, renewDeadline time.Duration
	retryPeriod, shutdownTimeout time.Duration
	runTimeout                   time.Duration
	qps                          float32
	burst                        int
	metricsAddr, probeAddr       string
}

func (f *controllerFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.IntVar(&f.concurrent, "concurrent", 4, "namespaces planned and published at once")
	fl.DurationVar(&f.interval, "interval", 10*time.Minute, "run every namespace again after this long (a token due for renewal runs sooner)")
	fl.StringVar(&f.configNamespace, "pipeline-config-namespace", "solar-system", "the namespace whose PipelineConfig is read (agent API server URL, token TTL); one in any other namespace is not")
	fl.StringVar(&f.namespaceSelector, "namespace-selector", "", "work only on the namespaces whose labels match (a shard: e.g. solar.opendefense.cloud/shard=a; another controller takes shard=b)")
	fl.IntVar(&f.shards, "shards", 1, "split the namespaces into N shards by a hash of their names: every replica campaigns for every shard's Lease (ID-shard-I) and leads its share (N / live replicas); a crashed replica's shards are taken over once their Leases expire")
	fl.BoolVar(&f.leaderElect, "leader-elect", true, "elect one leader among the replicas with a Lease; the others wait")
	fl.StringVar(&f.leaderElectionID, "leader-election-id", "", "name of the Lease (default solar-controller, with a --namespace-selector its own per selector)")
	fl.StringVar(&f.leaseNS, "leader-election-namespace", "", "namespace of the Lease (default: the Pod's own)")
	fl.DurationVar(&f.leaseDuration, "lease-duration", 15*time.Second, "how long a leader's Lease holds without renewal: a replica takes over after it")
	fl.DurationVar(&f.renewDeadline, "renew-deadline", 10*time.Second, "how long the leader tries to renew before it stops")
	fl.DurationVar(&f.retryPeriod, "retry-period", 2*time.Second, "how often the replicas try to take the Lease")
	fl.DurationVar(&f.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long a stop (SIGTERM) waits for publishes in progress")
	fl.DurationVar(&f.runTimeout, "run-timeout", 10*time.Minute, "longest one namespace's plan and publish may take")
	fl.Float32Var(&f.qps, "kube-api-qps", 50, "requests per second to the API server, at most")
	fl.IntVar(&f.burst, "kube-api-burst", 300, "requests to the API server at once, beyond --kube-api-qps")
	fl.StringVar(&f.metricsAddr, "metrics-addr", ":8080", `address of /metrics ("0": off)`)
	fl.StringVar(&f.probeAddr, "health-addr", ":8081", `address of /healthz and /readyz ("0": off)`)
}

// options are the controller options of the flags.
func (f *controllerFlags) options() (controller.Options, error) {
	o := controller.Options{Concurrent: f.concurrent, Interval: f.interval, ConfigNamespace: f.configNamespace,
		LeaderElection: f.leaderElect, LeaderElectionID: f.leaderElectionID, LeaderElectionNamespace: f.leaseNS,
		LeaseDuration: f.leaseDuration, RenewDeadline: f.renewDeadline, RetryPeriod: f.retryPeriod,
		ShutdownTimeout: f.shutdownTimeout, RunTimeout: f.runTimeout, Shards: f.shards, QPS: f.qps, Burst: f.burst, MetricsAddr: f.metricsAddr, ProbeAddr: f.probeAddr}
	if f.concurrent < 1 {
		return o, fmt.Errorf("--concurrent must be at least 1")
	}
	if f.shards < 1 {
		return o, fmt.Errorf("--shards must be at least 1")
	}
	if f.namespaceSelector != "" {
		sel, err := labels.Parse(f.namespaceSelector)
		if err != nil {
			return o, fmt.Errorf("--namespace-selector: %w", err)
		}
		o.NamespaceSelector = sel
		if o.LeaderElectionID == "" {
			o.LeaderElectionID = controller.LeaseName(sel)
		}
	}
	return o, nil
}

// importedReportsInterval is how often the controller looks whether an
// import changed the folder of --reports.
const importedReportsInterval = 10 * time.Second

func newControllerCmd(g *globals) *cobra.Command {
	var f planFlags
	var rf registryFlags
	var sf signFlags
	var cf controllerFlags
	var nf natsFlags
	cmd := &cobra.Command{
		Use:   "controller --registry HOST[:PORT][/PREFIX]",
		Short: "Publish from the objects in the SolAr API server, on every change",
		Long:  controllerLong,
		Example: `  solar controller --kubeconfig solar.yaml --registry registry.example.com/solar --leader-elect=false
  solar controller --registry registry.example.com/solar --namespace-selector solar.opendefense.cloud/shard=a
  solar controller --registry registry.example.com/solar --shards 3   # in each of 3 replicas`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := cf.options()
			if err != nil {
				return err
			}
			if opts.Pipeline, err = f.options(g, nil, nil); err != nil {
				return err
			}
			opts.Pipeline.Progress = nil
			if f.reports != "" {
				// Imports while it runs are read at the next look, not at start only.
				live, err := sitereport.NewLive(f.reports, importedReportsInterval)
				if err != nil {
					return err
				}
				opts.Pipeline.ImportedReports = live.Report
			}
			if opts.Pipeline.SigningKey, err = sf.key(g); err != nil {
				return err
			}
			l, err := rf.read(cmd.InOrStdin())
			if err != nil {
				return err
			}
			opts.Registry = *rf.options(l)
			if opts.Config, err = restConfig(f.kubeconfig); err != nil {
				return err
			}
			if nf.server != "" {
				opts.Fleet = &controller.FleetOptions{NATS: nf.nats(g)}
			}
			g.controllerLogs(&opts)
			return controller.Run(cmd.Context(), opts)
		},
	}
	f.registerResolve(cmd)
	_ = cmd.Flags().MarkHidden("target")
	_ = cmd.Flags().MarkHidden("dry-run")
	cmd.Flags().StringVar(&f.reports, "reports", "", reportsFlagHelp+" (the rollout gates; read again when an import changed it)")
	f.registerPrune(cmd, "for every orphan (the bootstrap repository of a Target deleted from the API server), push a version without releases: Flux then uninstalls them")
	rf.registerClient(g, cmd.Flags(), "to push to")
	sf.register(cmd.Flags())
	cf.register(cmd)
	nf.register(cmd.Flags())
	return cmd
}

// controllerLogs sets the controller's logs, key=value for a log collector:
// the controller says what it does at info (-q: errors only, --debug: debug,
// with every request to the registry and the API server); the stages, as
// for the other commands, only with -v.
func (g *globals) controllerLogs(opts *controller.Options) {
	level := slog.LevelInfo
	switch {
	case g.quiet:
		level = slog.LevelError
	case g.debug:
		level = slog.LevelDebug
	}
	opts.Log = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: level}))
	opts.Pipeline.Log = slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: g.level}))
	opts.Registry.Wrap, opts.Pipeline.WrapTransport = nil, nil
	if g.debug {
		opts.Registry.Wrap = logRequests(opts.Log)
		opts.Config.Wrap(logRequests(opts.Log))
	}
}

// restConfig is the kubeconfig's connection, or in a Pod its own.
func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig and not in a Pod: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}

const controllerLong = `controller runs solar publish whenever an object changes: it watches the
SolAr kinds (Target, Profile, Release, Component, ComponentVersion, Registry,
ReleaseBinding, RegistryBinding, ReferenceGrant, PipelineConfig) in the API
server and re-plans the namespace of each change (and the namespaces its
ReferenceGrants let refer to it), as solar publish -n NS would with the same
objects: the same charts, the same versions and digests. Unchanged input
writes nothing.

Each Target's status says what happened: Ready (Succeeded, InvalidInput,
MintFailed, PublishFailed), Reconciling while it retries with backoff,
Stalled until its input changes, AgentCredentialReady, observedGeneration and
the bootstrap chart published (repository, version, digest). Every namespace
runs again after --interval, and before a token is due for renewal, so a
token is rotated on time with no CI job running.

Several replicas elect one leader with a Lease (--leader-elect); a large
installation is split over controllers by --namespace-selector, one Lease per
shard, or over replicas by --shards N: each namespace belongs to one of N
shards (a hash of its name), every replica campaigns for every shard's Lease
and leads its share of them (N / live replicas, counted from each replica's
own Lease), and a replica's shards are taken over when it is gone, once
their Leases expire (--lease-duration). Metrics: --metrics-addr /metrics;
probes: --health-addr /healthz, /readyz. SIGTERM waits up to
--shutdown-timeout for publishes in progress.

With --nats (or $NATS_URL) it is the fleet's pass too: it watches Devices,
DeviceUpgrades and the devices' states in the bucket, and applies a
namespace's DeviceUpgrades as solar fleet apply -n NS would whenever one of
them changes, so a rollout's next wave starts as soon as the states allow.

With --reports DIR, the folder solar import-reports imports air-gapped sites'
report archives into, the rollout gates read a Target a site reported there
(any other from the API server), and an import while the controller runs is
read within 10 seconds (docs/airgap-reports.md).
It needs the RBAC of config/controller/ and, in each namespace whose Targets
it serves, a RoleBinding to ClusterRole solar-controller-tenant; elsewhere it
reads no Secret and mints no token (docs/controller.md).`
