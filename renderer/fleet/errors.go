package fleet

import (
	"errors"
)

// The sentinel errors of the package, as errors.Is finds them.

// ErrAgentNotRead: Resolve was given no agent index for a DeviceUpgrade's
// spec.artifact: the caller reads every one of Artifacts first.
var ErrAgentNotRead = errors.New("the agent index was not read")
