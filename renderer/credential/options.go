package credential

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/solar-pipeline/solar/api"
	"github.com/solar-pipeline/solar/renderer/model"
)

// DefaultTTL is an agent token's lifetime when the PipelineConfig sets none
// (its schema says so too).
const DefaultTTL = 24 * time.Hour

// OptionsFrom reads the agent settings of the set's PipelineConfig: the API
// server URL agents use and the token TTL (default DefaultTTL).
func OptionsFrom(s *model.Set) (Options, error) {
	opts := Options{TTL: DefaultTTL}
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

// Disabled is the credential of a Target when the PipelineConfig sets no
// spec.agent.apiserverURL.
func Disabled() *Credential {
	return &Credential{Status: metav1.ConditionFalse, Reason: api.ReasonDisabled, Message: disabledMessage}
}
