package credential

import (
	"context"
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/renderer/model"
	"github.com/solar-pipeline/solar/renderer/resolve"
)

// OptionsFrom reads the agent settings of the set's PipelineConfig: the API
// server URL agents use and the token TTL (default 24h).
func OptionsFrom(s *model.Set) (Options, error) {
	opts := Options{TTL: 24 * time.Hour}
	if len(s.PipelineConfigs) == 0 {
		return opts, nil
	}
	agent := s.PipelineConfigs[0].Spec.Agent
	opts.APIServerURL = agent.APIServerURL
	if agent.TokenTTL != "" {
		ttl, err := time.ParseDuration(agent.TokenTTL)
		if err != nil {
			return opts, fmt.Errorf("PipelineConfig spec.agent.tokenTTL: %w", err)
		}
		opts.TTL = ttl
	}
	return opts, nil
}

// Wants reports whether a resolved Target gets an agent credential.
func Wants(t *resolve.Target) bool {
	return slices.ContainsFunc(t.Releases, func(s *resolve.Selected) bool { return Wanted(s.Release) })
}

// ForPlan syncs the credential of every Target of the plan that resolved and
// gets an agent release, keyed "<namespace>/<name>". Without a minter (no API
// server given) only a disabled credential is known; the others are absent.
func ForPlan(ctx context.Context, m *Minter, opts Options, plan *resolve.Plan) map[string]*Credential {
	out := map[string]*Credential{}
	for _, t := range plan.Targets {
		if t.Problems.HasErrors() || !Wants(t) {
			continue
		}
		key := t.Target.Namespace + "/" + t.Target.Name
		switch {
		case m != nil:
			cred := m.Sync(ctx, t.Target)
			out[key] = &cred
		case opts.APIServerURL == "":
			out[key] = &Credential{Status: metav1.ConditionFalse, Reason: ReasonDisabled, Message: disabledMessage}
		}
	}
	return out
}
