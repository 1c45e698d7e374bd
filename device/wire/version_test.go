package wire

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBuildVersion(t *testing.T) {
	ld := func(v string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{{Key: "-ldflags", Value: v}}}
	}
	assert.Equal(t, "1.4.0", BuildVersion(ld("-s -w -X main.version=1.4.0")))
	assert.Equal(t, "1.4.0", BuildVersion(ld("-X=main.version=1.4.0 -X main.behaviour=x")))
	assert.Equal(t, "1.4.0", BuildVersion(ld(`"-X main.version=1.4.0"`)))
	assert.Equal(t, "v0.3.0", BuildVersion(ld("-X main.behaviour=x")), "the module's version without a linked one")
	assert.Equal(t, "", BuildVersion(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}))
	assert.Equal(t, "", BuildVersion(nil))
}
