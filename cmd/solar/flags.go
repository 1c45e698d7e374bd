package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"oras.land/oras-go/v2/registry"

	"github.com/solar-pipeline/solar/renderer/pipeline"
	"github.com/solar-pipeline/solar/renderer/publish"
	"github.com/solar-pipeline/solar/renderer/store"
)

// loadFlags are the flags of every command that reads objects.
type loadFlags struct {
	policyDirs  []string
	exclude     []string
	strict      bool
	maxFileSize string
	cacheDir    string
}

func (f *loadFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.policyDirs, "policy", nil, "directory of CUE policies (package policy) to add; repeatable")
	cmd.Flags().StringArrayVar(&f.exclude, "exclude", nil, "leave out files and folders matching this pattern (.solarignore syntax) below each directory; repeatable")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "make objects of other API groups, and walked files that hold none, errors instead of skipping them; and a Profile that matches no Target, and a Target that gets no release, errors instead of warnings")
	cmd.Flags().StringVar(&f.maxFileSize, "max-file-size", "16Mi", "largest input file read (a size such as 512Ki, 16Mi, 1Gi)")
	cache := ""
	if dir, err := os.UserCacheDir(); err == nil {
		cache = filepath.Join(dir, "solar")
	}
	cmd.Flags().StringVar(&f.cacheDir, "cache-dir", cache, `remember objects that passed validation here, so an unchanged object is not checked again ("" for no cache)`)
}

// options are the pipeline options of the flags; "-" as a path reads stdin.
func (f *loadFlags) options(g *globals, stdin io.Reader, paths []string) (pipeline.Options, error) {
	size, err := resource.ParseQuantity(f.maxFileSize)
	if err != nil || size.Sign() <= 0 {
		return pipeline.Options{}, fmt.Errorf("invalid --max-file-size %q: want a size such as 16Mi", f.maxFileSize)
	}
	return pipeline.Options{LoadOptions: pipeline.LoadOptions{Paths: paths, Namespace: g.namespace, PolicyDirs: f.policyDirs,
		Exclude: f.exclude, Strict: f.strict, Stdin: stdin, MaxFileSize: size.Value(), CacheDir: f.cacheDir}, Log: g.log}, nil
}

// selectFlags narrow the Targets worked on as kubectl narrows objects: -l
// over the Targets' labels, and -A, every namespace (as without -n).
type selectFlags struct {
	selector      string
	allNamespaces bool
}

func (f *selectFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.selector, "selector", "l", "", "work on the Targets whose labels match this selector only, as kubectl's -l: k=v, k!=v, 'k in (a,b)', 'k notin (a,b)', k, !k; a comma is and")
	cmd.Flags().BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "work on the Targets of every namespace, as without -n")
}

// apply checks -A against -n and sets opts.Selector from -l; the zero
// value selects every Target.
func (f *selectFlags) apply(g *globals, opts *pipeline.Options) error {
	if f.allNamespaces && g.namespace != "" {
		return fmt.Errorf("-A and -n: choose one")
	}
	if f.selector == "" {
		return nil
	}
	sel, err := labels.Parse(f.selector)
	if err != nil {
		return fmt.Errorf("invalid -l/--selector %q: %w", f.selector, err)
	}
	opts.Selector = sel
	return nil
}

// planFlags are the flags of every command that resolves and renders.
type planFlags struct {
	loadFlags
	selectFlags
	target        string
	strictRegs    bool
	dryRun        bool
	kubeconfig    string
	noCredentials bool
	reports       string
	prune         bool
	full          bool
	changedOnly   bool
}

// registerChanged adds --changed: render and publish take it.
func (f *planFlags) registerChanged(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.changedOnly, "changed", false, "list only the Targets and charts that change (or would), and count the unchanged Targets on stderr; -o json and yaml still hold every Target")
}

// registerPrune adds --prune and --full: only render, publish and diff
// take them.
func (f *planFlags) registerPrune(cmd *cobra.Command, what string) {
	cmd.Flags().BoolVar(&f.prune, "prune", false, what)
	cmd.Flags().BoolVar(&f.full, "full", false, "ask every repository for its versions and latest manifest instead of trusting the namespace indexes (docs/index.md), and list the store's repositories; the indexes are rewritten from what is found; in a layout, a damaged blob of a version found unchanged is written again")
}

// register adds the flags of the commands that render: those of
// registerResolve, and --no-credentials.
func (f *planFlags) register(cmd *cobra.Command) {
	f.registerResolve(cmd)
	cmd.Flags().StringVar(&f.reports, "reports", "", reportsFlagHelp+" (the rollout gates)")
	cmd.Flags().BoolVar(&f.noCredentials, "no-credentials", false, "render agent Releases without a token (a demo, an offline review); without it a Target whose agent credential is not issued fails")
}

// registerResolve adds the flags of every command that resolves Targets and
// mints their credentials (credentials sync takes only these).
func (f *planFlags) registerResolve(cmd *cobra.Command) {
	f.loadFlags.register(cmd)
	cmd.Flags().StringVar(&f.target, "target", "", "work on the Target of this name only (with -n, of that namespace)")
	cmd.Flags().BoolVar(&f.strictRegs, "strict-registry-bindings", false, "make a registry a Target pulls from without a RegistryBinding an error (default: anonymous pulls)")
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "compute versions and actions against the store, write nothing")
	cmd.Flags().StringVar(&f.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the SolAr API server: mint agent credentials there first (docs/credentials.md; default $KUBECONFIG)")
	// Completion of --target from the Targets of the PATHs typed so far
	// (of -n, when given).
	_ = cmd.RegisterFlagCompletionFunc("target", func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		ns, _ := cmd.InheritedFlags().GetString("namespace")
		var names []string
		for _, t := range pipeline.Targets(pipeline.LoadOptions{Paths: args, Namespace: ns, Exclude: f.exclude}) {
			if ns == "" || t.Namespace == ns {
				names = append(names, t.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	})
}

// requiredKubeconfig is the help of a --kubeconfig that a command cannot do
// without. It is not marked required for cobra: $KUBECONFIG stands in for
// it, as for kubectl.
func requiredKubeconfig(what string) string {
	return "the kubeconfig `FILE` of " + what + "; required: this flag or $KUBECONFIG"
}

// options are the pipeline options of the flags; SOURCE_DATE_EPOCH, the
// reproducible-builds convention, sets the manifests' created time.
func (f *planFlags) options(g *globals, stdin io.Reader, paths []string) (pipeline.Options, error) {
	opts, err := f.loadFlags.options(g, stdin, paths)
	if err != nil {
		return opts, err
	}
	opts.Target, opts.StrictRegistryBindings, opts.Kubeconfig, opts.DryRun = f.target, f.strictRegs, f.kubeconfig, f.dryRun
	opts.NoCredentials, opts.Prune, opts.Full = f.noCredentials, f.prune, f.full
	if opts.ImportedReports, err = importedReports(f.reports); err != nil {
		return opts, err
	}
	g.dryRun, g.changedOnly = f.dryRun, f.changedOnly
	if err := f.selectFlags.apply(g, &opts); err != nil {
		return opts, err
	}
	if f.prune && opts.Selector != nil && !opts.Selector.Empty() {
		return opts, fmt.Errorf("--prune with -l: a Target no longer in the input has no labels left to match, so a run with -l looks for no orphans; prune without -l (with -n for one namespace)")
	}
	opts.WrapTransport = g.requestLog()
	opts.Progress = g.progress()
	created, ok, err := publish.SourceDateEpoch()
	if ok {
		opts.Package.Created = created
	}
	return opts, err
}

// registryFlags say where a registry is and how to log in.
type registryFlags struct {
	registry      string
	username      string
	passwordStdin bool
	caFile        string
	plainHTTP     bool
	insecure      bool
	// g says, with --debug, to log every request to the registry.
	g *globals
}

func (f *registryFlags) register(g *globals, fl *pflag.FlagSet, what string) {
	f.g = g
	fl.StringVar(&f.registry, "registry", "", "registry "+what+": [oci://]HOST[:PORT][/PREFIX]")
	fl.StringVar(&f.username, "username", "", "registry user name (with --password-stdin)")
	fl.BoolVar(&f.passwordStdin, "password-stdin", false, "read the registry password from stdin")
	fl.StringVar(&f.caFile, "ca-file", "", "PEM file of CA certificates to trust for the registry")
	fl.BoolVar(&f.plainHTTP, "plain-http", false, "talk plain HTTP to the registry (development only)")
}

// registerClient registers the flags of a command that talks to the
// registry itself: those of register and --insecure-skip-tls-verify.
func (f *registryFlags) registerClient(g *globals, fl *pflag.FlagSet, what string) {
	f.register(g, fl, what)
	fl.BoolVar(&f.insecure, "insecure-skip-tls-verify", false, "do not verify the registry's TLS certificate (development only)")
}

// options are the client options the flags and l say; with --debug every
// request is logged.
func (f *registryFlags) options(l login) *store.RemoteOptions {
	return &store.RemoteOptions{Host: l.host, Prefix: l.prefix, Username: f.username, Password: l.password,
		CAFile: f.caFile, PlainHTTP: f.plainHTTP, InsecureSkipTLSVerify: f.insecure, Wrap: f.g.requestLog()}
}

// login is what the registry flags say: where the registry is and the
// password read from stdin.
type login struct {
	host, prefix, password string
}

// read parses --registry and reads the password.
func (f *registryFlags) read(stdin io.Reader) (login, error) {
	host, prefix, err := f.parse()
	if err != nil {
		return login{}, err
	}
	password, err := f.password(stdin)
	return login{host: host, prefix: prefix, password: password}, err
}

// remote reads the registry flags and the password and opens the registry.
func (f *registryFlags) remote(ctx context.Context, stdin io.Reader) (*pipeline.Store, error) {
	so, err := f.storeOptions("", stdin)
	if err != nil {
		return nil, err
	}
	return pipeline.OpenStore(ctx, so)
}

// storeOptions say the layout out, if given, else the registry of the flags
// (reading the password).
func (f *registryFlags) storeOptions(out string, stdin io.Reader) (pipeline.StoreOptions, error) {
	if out != "" {
		return pipeline.StoreOptions{Out: out}, nil
	}
	l, err := f.read(stdin)
	return pipeline.StoreOptions{Registry: f.options(l)}, err
}

// orOut checks that exactly one of --out (the layout out) and --registry is
// given.
func (f *registryFlags) orOut(out string) error {
	if (out == "") == (f.registry == "") {
		return fmt.Errorf("give one of --out and --registry")
	}
	return nil
}

// readStore opens what diff and verify read: the layout out, read-only (it
// must exist with mustExist), or else the registry of the flags. Close
// releases it.
func (f *registryFlags) readStore(ctx context.Context, out string, mustExist bool, stdin io.Reader) (*pipeline.Store, error) {
	so, err := f.storeOptions(out, stdin)
	if err != nil {
		return nil, err
	}
	so.ReadOnly, so.MustExist = true, mustExist
	return pipeline.OpenStore(ctx, so)
}

// parse checks --registry with oras-go's reference rules and splits it into
// host and prefix.
func (f *registryFlags) parse() (host, prefix string, err error) {
	if f.registry == "" {
		return "", "", fmt.Errorf("--registry is required: HOST[:PORT][/PREFIX]")
	}
	if strings.Contains(f.registry, "@") {
		// Never echoed: it may hold a password.
		return "", "", fmt.Errorf("invalid --registry: it holds user information (user:password@); pass --username and --password-stdin instead")
	}
	// oci://, as Flux and Helm write registries, is the only scheme.
	s := strings.Trim(strings.TrimPrefix(f.registry, "oci://"), "/")
	invalid := func(err error) error {
		return fmt.Errorf("invalid --registry %q: want [oci://]HOST[:PORT][/PREFIX]: %w", f.registry, err)
	}
	if strings.Contains(s, "://") {
		return "", "", invalid(fmt.Errorf("a scheme other than oci://"))
	}
	if !strings.Contains(s, "/") {
		ref := registry.Reference{Registry: s}
		if err := ref.ValidateRegistry(); err != nil {
			return "", "", invalid(err)
		}
		return s, "", nil
	}
	ref, err := registry.ParseReference(s)
	if err != nil {
		return "", "", invalid(err)
	}
	if ref.Reference != "" {
		return "", "", invalid(fmt.Errorf("a tag or digest %q", ref.Reference))
	}
	return ref.Registry, ref.Repository, nil
}

// password reads the password from stdin with --password-stdin; passwords
// never come as arguments.
func (f *registryFlags) password(stdin io.Reader) (string, error) {
	if !f.passwordStdin {
		if f.username != "" {
			return "", fmt.Errorf("--username needs --password-stdin: solar does not take passwords as arguments")
		}
		return "", nil
	}
	if f.username == "" {
		return "", fmt.Errorf("--password-stdin needs --username")
	}
	b, err := io.ReadAll(stdin)
	if err != nil {
		return "", fmt.Errorf("reading the password from stdin: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}
