package pipeline

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/credential"
	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// credentials sync the agent credentials of Targets, a batch at a time,
// with one minter.
type credentials struct {
	set    *model.Set
	opts   Options
	copts  credential.Options
	minter *credential.Minter
}

// newCredentials is the minter opts call for, if any.
func newCredentials(set *model.Set, opts Options) (*credentials, error) {
	copts, err := credential.OptionsFrom(set)
	if err != nil {
		return nil, err
	}
	c := &credentials{set: set, opts: opts, copts: copts}
	if (opts.Kubeconfig != "" || opts.RESTConfig != nil) && !opts.NoCredentials {
		// A dry run reads the credentials and writes nothing.
		c.copts.ReadOnly, c.copts.Cache = opts.DryRun, opts.CredentialCache
		cfg := opts.RESTConfig
		if cfg == nil {
			if cfg, err = clientcmd.BuildConfigFromFlags("", opts.Kubeconfig); err != nil {
				return nil, fmt.Errorf("reading the kubeconfig %s: %w", opts.Kubeconfig, err)
			}
			cfg.Wrap(opts.WrapTransport)
		}
		if c.minter, err = credential.NewMinter(cfg, c.copts); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// sync attaches its agent credential to every Target of targets that
// resolved and gets an agent Release. Without a kubeconfig only a disabled
// credential is known (no apiserverURL); the others stay absent.
func (c *credentials) sync(ctx context.Context, targets []*Target) {
	set, opts, copts, minter := c.set, c.opts, c.copts, c.minter
	for _, t := range targets {
		if t.Problems.HasErrors() || !slices.ContainsFunc(t.Releases, func(s *resolve.Selected) bool { return credential.Wanted(s.Release) }) {
			continue
		}
		switch {
		case minter != nil:
			cred := minter.Sync(ctx, t.Target)
			t.Credential = &cred
		case copts.APIServerURL == "":
			t.Credential = credential.Disabled()
		}
		checkCredential(set, t, opts)
	}
}

// checkCredential fails a Target whose agent credential is not issued (in a
// dry run, would be): a new bootstrap chart would point its agent at a chart
// without a token. With NoCredentials that is only a warning. A credential
// revoked on purpose is an operator's decision, not a failure: the Target
// renders without its agent release, excluded with the reason, and a warning
// says so.
func checkCredential(set *model.Set, t *Target, opts Options) {
	c := t.Credential
	if c != nil && (c.Reason == api.ReasonIssued || (opts.DryRun && c.Reason == api.ReasonPending)) {
		return
	}
	o := set.Loaded(api.KindTarget, t.Namespace, t.Name)
	if c != nil && c.Reason == api.ReasonRevoked {
		reason := "its agent credential is revoked (annotation " + api.AnnotationAgentCredential + ")"
		t.Releases = slices.DeleteFunc(t.Releases, func(s *resolve.Selected) bool {
			if credential.Wanted(s.Release) {
				t.Excluded = append(t.Excluded, resolve.Excluded{Release: s.Release, Reason: reason})
			}
			return credential.Wanted(s.Release)
		})
		t.Problems.Warnf(o.File, o.LineOf("metadata.annotations"), "metadata.annotations",
			"Target %s/%s: %s; its agent release is left out, and Flux uninstalls the agent, until the annotation goes", t.Namespace, t.Name, reason)
		return
	}
	if opts.NoCredentials {
		// The user chose this: say what it costs and what mints one, not
		// the flag they already gave.
		why := " until a run with --kubeconfig mints one"
		if c != nil {
			why = "; the agent credential is " + c.Reason + ": " + c.Message
		}
		t.Problems.Warnf(o.File, o.LineOf("metadata.name"), "metadata.name",
			"Target %s/%s: its agent gets no token (--no-credentials), so it cannot report to the SolAr API server%s", t.Namespace, t.Name, why)
		return
	}
	why := "unknown: pass --kubeconfig of the SolAr API server, or --no-credentials"
	if c != nil {
		why = c.Reason + ": " + c.Message
	}
	t.Problems.Errorf(o.File, o.LineOf("metadata.name"), "metadata.name",
		"Target %s/%s: its agent credential is not issued (%s); the Target keeps its previous bootstrap chart", t.Namespace, t.Name, why)
}
