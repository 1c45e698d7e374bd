package chart

import (
	"fmt"
	"time"

	"github.com/solar-pipeline/solar/renderer/model"
)

// DefaultRetries are the install and upgrade remediation retries of an
// application HelmRelease when the PipelineConfig sets none (its schema says
// so too).
const DefaultRetries = 3

// AppOptions are the operator's settings of every application HelmRelease
// (level 3), from the PipelineConfig's spec.flux. The zero value is the
// policy of a PipelineConfig without them: no spec.timeout and
// DefaultRetries.
type AppOptions struct {
	// Timeout is the HelmRelease's spec.timeout; zero leaves it unset, so
	// helm-controller's default (5m) applies and the charts of an input that
	// sets none stay byte for byte what they were.
	Timeout time.Duration
	// Retries are the install and upgrade remediation retries; nil:
	// DefaultRetries.
	Retries *int
	// AgentImage, REPOSITORY@sha256:HEX (the PipelineConfig's
	// spec.agent.image), is the image of every agent release: its values'
	// image.repository and image.digest, unless the Release sets them.
	AgentImage string
}

func (o AppOptions) retries() int {
	if o.Retries == nil {
		return DefaultRetries
	}
	return *o.Retries
}

// AppOptionsFrom reads the application HelmRelease settings of the set's
// PipelineConfig (validation has checked them).
func AppOptionsFrom(s *model.Set) (AppOptions, error) {
	var opts AppOptions
	if len(s.PipelineConfigs) == 0 {
		return opts, nil
	}
	flux := s.PipelineConfigs[0].Spec.Flux
	opts.Retries = flux.Retries
	opts.AgentImage = s.PipelineConfigs[0].Spec.Agent.Image
	if flux.Timeout != "" {
		d, err := time.ParseDuration(flux.Timeout)
		if err != nil {
			return opts, fmt.Errorf("PipelineConfig spec.flux.timeout: %w", err)
		}
		opts.Timeout = d
	}
	return opts, nil
}
