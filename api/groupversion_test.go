package api

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPlural(t *testing.T) {
	assert.Equal(t, "targets", Plural("Target"))
	assert.Equal(t, "registries", Plural("Registry"))
	assert.Equal(t, "referencegrants", Plural("ReferenceGrant"))
	assert.Equal(t, "rollouts", Plural(KindRollout))
}
