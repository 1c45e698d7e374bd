// Command solar-updater is the reference device updater of the fleet agent
// upgrade (docs/updater.md): a root service that takes attempts from the
// device's agent over a Unix socket owned by the agent's group, replaces the
// agent in one crash-safe transaction, and reports the outcomes back. It
// opens no network connection but the artifact download.
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/solar-pipeline/solar/internal/capool"

	"github.com/solar-pipeline/solar/device/updater"
	"github.com/solar-pipeline/solar/device/wire"
)

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, " ") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "solar-updater:", err)
		os.Exit(1)
	}
}

// config is what the flags say.
type config struct {
	root, unit, repair, cgroup              string
	agentArgs                               stringList
	group, agentUID, agentGID, maxTries     int
	maxSize                                 int64
	probeTimeout, readyTimeout, stopTimeout time.Duration
	dl                                      downloadFlags
	version, agentAsRoot                    bool
}

func parseFlags() *config {
	c := &config{}
	flag.StringVar(&c.root, "root", "/var/lib/solar-updater", "root folder: the journal, the installed binaries, the agent link, the socket")
	flag.StringVar(&c.unit, "unit", "", "systemd unit of the agent (systemctl stop/start); without it the updater supervises the agent process itself")
	flag.Var(&c.agentArgs, "agent-arg", "an argument of the agent, when the updater supervises it; repeatable")
	flag.IntVar(&c.group, "group", -1, "gid of the fleet-agent group: the only peers the socket accepts (required)")
	flag.IntVar(&c.agentUID, "agent-uid", -1, "uid to run probes (and a supervised agent) as; -1 keeps the updater's")
	flag.IntVar(&c.agentGID, "agent-gid", -1, "gid to run probes (and a supervised agent) as; required with --agent-uid")
	flag.StringVar(&c.cgroup, "cgroup", "auto", "cgroup v2 folder for what the updater starts (probes, a supervised agent), stopped whole with cgroup.kill: auto (a child of the updater's own cgroup, named after --root), off (the fallback: sessions), or a folder")
	flag.BoolVar(&c.agentAsRoot, "agent-as-root", false, "run probes (and a supervised agent) as root: only for a try on one machine; then the agent's group can run anything as root")
	c.dl = addDownloadFlags()
	flag.DurationVar(&c.probeTimeout, "probe-timeout", 30*time.Second, "limit of agent --probe")
	flag.DurationVar(&c.readyTimeout, "ready-timeout", 2*time.Minute, "how long a started agent has to report ready")
	flag.DurationVar(&c.stopTimeout, "stop-timeout", 30*time.Second, "SIGTERM to SIGKILL, when the updater supervises the agent")
	flag.IntVar(&c.maxTries, "max-tries", 3, "attempts begun per digest, kills and power cuts included")
	flag.Int64Var(&c.maxSize, "max-artifact-size", 512<<20, "largest agent binary an attempt may name, in bytes")
	flag.StringVar(&c.repair, "repair", "", "clear a rollback-failed block, giving the reason, and exit (once a working agent runs again)")
	flag.BoolVar(&c.version, "version", false, "print this updater's version and exit")
	flag.Usage = func() {
		fmt.Fprint(flag.CommandLine.Output(), `solar-updater: the root service of a device that replaces its fleet agent in
one crash-safe transaction (docs/updater.md). The agent forwards each upgrade
attempt over ROOT/sock/updater.sock; the updater downloads the binary,
checks it, switches, and commits once the new agent reports ready, or goes
back to the previous one.

Usage:
  solar-updater --root ROOT --group GID --agent-uid UID --agent-gid GID [--unit fleet-agent.service] [--credentials FILE]
  solar-updater --root ROOT --repair REASON
  solar-updater --version

`)
		flag.PrintDefaults()
	}
	flag.Parse()
	return c
}

func run() error {
	c := parseFlags()
	if c.version {
		bi, _ := debug.ReadBuildInfo()
		fmt.Println(cmp.Or(wire.BuildVersion(bi), "(devel)"))
		return nil
	}
	// Nothing the updater makes is writable by group or others, whatever
	// umask it inherited; modes are set explicitly where more is meant.
	syscall.Umask(0o022)
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := os.MkdirAll(c.root, 0o755); err != nil {
		return err
	}
	// The kernel shows a process's executable by its real path: the root
	// is compared by its real path too.
	realRoot, err := filepath.EvalSymlinks(c.root)
	if err != nil {
		return err
	}
	paths := updater.Paths{Root: realRoot}
	if c.repair != "" {
		if err := updater.Repair(paths, c.repair); err != nil {
			return err
		}
		log.Warn("repaired: attempts are accepted again", "reason", c.repair)
		return nil
	}
	if c.group < 0 {
		return fmt.Errorf("--group is required: the gid of the fleet-agent group")
	}
	var cred *syscall.Credential
	switch {
	case c.agentUID > 0 && c.agentGID < 0:
		return fmt.Errorf("--agent-uid needs --agent-gid")
	case c.agentUID > 0:
		cred = &syscall.Credential{Uid: uint32(c.agentUID), Gid: uint32(c.agentGID)}
	case !c.agentAsRoot:
		// A probe runs the binary an attempt names: as root, whoever may
		// send attempts (the socket's group) could run anything as root.
		return fmt.Errorf("--agent-uid and --agent-gid are required (a uid other than 0): probes and a supervised agent must not run as root (--agent-as-root for a try on one machine)")
	}
	return serve(c, paths, cred, log)
}

// serve resumes the journal, starts a supervised agent when none runs, and
// serves the socket until SIGTERM or SIGINT.
func serve(c *config, paths updater.Paths, cred *syscall.Credential, log *slog.Logger) error {
	client, download, err := c.dl.options(log)
	if err != nil {
		return err
	}
	cgroup, err := c.findCgroup(paths, log)
	if err != nil {
		return err
	}
	var service updater.Service = updater.Systemd{Unit: c.unit}
	supervisor := updater.Supervisor{Paths: paths, Args: c.agentArgs, StopTimeout: c.stopTimeout, Credential: cred, Cgroup: cgroup}
	if c.unit == "" {
		service = supervisor
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	u, err := updater.New(ctx, updater.Options{
		Paths: paths, Service: service, Credential: cred, Cgroup: cgroup, MaxTries: c.maxTries, MaxSize: c.maxSize,
		Client: client, Download: download,
		ProbeTimeout: c.probeTimeout, ReadyTimeout: c.readyTimeout,
		Report: func(o wire.Outcome) {
			log.Info("outcome", "uuid", o.UUID, "device", o.DeviceID, "state", o.State, "version", o.Version, "step", o.Step, "reason", o.Reason)
		},
		Log: log,
	})
	if err != nil {
		return err
	}
	if c.unit == "" {
		// At boot, or after the agent crashed: the selected agent runs.
		if err := supervisor.StartIfNone(ctx); err != nil {
			log.Warn("starting the agent", "err", err)
		}
	}
	l, err := updater.Listen(paths, c.group)
	if err != nil {
		return err
	}
	log.Info("listening", "socket", paths.Socket(), "group", c.group)
	return u.Serve(ctx, l, c.group)
}

// findCgroup is the cgroup --cgroup says. auto without a cgroup v2 of the
// updater's is the fallback, said in the log: a folder given that is not
// one is refused.
func (c *config) findCgroup(paths updater.Paths, log *slog.Logger) (updater.Cgroup, error) {
	const fallback = "stopping the agent or a probe stops its session and the agents: a process of theirs that makes a session of its own and runs no installed binary outlives the stop"
	switch c.cgroup {
	case "off":
		log.Warn("--cgroup off: " + fallback)
		return "", nil
	case "auto":
		cg, err := updater.FindCgroup(paths)
		if err != nil {
			log.Warn("no cgroup v2 of the updater's: "+fallback, "err", err)
			return "", nil
		}
		log.Info("what the updater starts runs in", "cgroup", cg)
		return cg, nil
	}
	return updater.OpenCgroup(c.cgroup)
}

// downloadFlags are the flags of the artifact download: whom to trust, the
// login, the timeouts and the pace of retries.
type downloadFlags struct {
	caFile, credentials                *string
	timeout, idle, backoff, backoffMax *time.Duration
}

func addDownloadFlags() downloadFlags {
	return downloadFlags{
		caFile:      flag.String("ca-file", "", "PEM certificates to trust for downloads besides the system's"),
		credentials: flag.String("credentials", "", "registry logins, a Docker config.json ({\"auths\": {\"HOST[:PORT]\": {\"auth\": base64(user:password)}}}), owned by root, mode 0600, read once at start; each sent to its own host only"),
		timeout:     flag.Duration("download-timeout", 10*time.Minute, "limit of one download try, whole"),
		idle:        flag.Duration("download-idle-timeout", time.Minute, "a download try that receives no byte for this long is aborted (and retried)"),
		backoff:     flag.Duration("download-backoff", time.Second, "wait after the first failed download try (link, TLS, server, login); doubled after each further one, with jitter"),
		backoffMax:  flag.Duration("download-backoff-max", 5*time.Minute, "longest wait between download tries (a 429/503 Retry-After may ask for longer)"),
	}
}

// options are the download's client and its limits. No proxy from the
// environment: the download goes to the attempt's URL and nowhere else.
func (f downloadFlags) options(log *slog.Logger) (*http.Client, updater.DownloadOptions, error) {
	var o updater.ClientOptions
	if *f.caFile != "" {
		pool, err := capool.WithFile(*f.caFile)
		if err != nil {
			return nil, updater.DownloadOptions{}, fmt.Errorf("--ca-file: %w", err)
		}
		o.RootCAs = pool
	}
	if *f.credentials != "" {
		c, err := updater.ReadCredentials(*f.credentials)
		if err != nil {
			return nil, updater.DownloadOptions{}, err
		}
		o.Credentials = c
		log.Info("download logins", "hosts", c.Hosts())
	}
	o.ResponseHeaderTimeout = *f.idle
	return updater.NewClient(o), updater.DownloadOptions{Timeout: *f.timeout, IdleTimeout: *f.idle, Backoff: *f.backoff, MaxBackoff: *f.backoffMax}, nil
}
