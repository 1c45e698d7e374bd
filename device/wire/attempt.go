package wire

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"
)

// deviceID is what a device id may be: it becomes a token of NATS subjects
// and KV keys, so no '.', '*', '>', whitespace or non-ASCII character.
var deviceID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// CheckDeviceID refuses a device id that is not 1 to 64 ASCII letters,
// digits, '_' and '-'. The schema refuses those too; every function of this
// package that builds a key checks again.
func CheckDeviceID(id string) error {
	if !deviceID.MatchString(id) {
		return fmt.Errorf("invalid device id %q: want 1 to 64 ASCII letters, digits, '_' and '-' (it becomes a NATS subject token)", id)
	}
	return nil
}

// Attempt is one device's upgrade attempt, as the device's updater reads it.
type Attempt struct {
	// UUID is derived from the rest of the attempt (Seal).
	UUID            string   `json:"uuid"`
	DeviceID        string   `json:"deviceId"`
	TargetVersion   string   `json:"targetVersion"`
	Artifact        Artifact `json:"artifact"`
	PreviousVersion string   `json:"previousVersion,omitempty"`
	NotAfter        string   `json:"notAfter,omitempty"`
	// Window, when set, is when the device may start the attempt; NotAfter
	// still bounds its retries. Omitted when nil, so that the UUIDs of
	// attempts without one stay those they had.
	Window *Window `json:"window,omitempty"`
}

// Window is the time in which a device may start an attempt: not before
// NotBefore, and only before StartBefore (RFC 3339, UTC). The planner turned
// a cron schedule into these two times: the device parses no schedule, and
// compares them with its own clock, as it does NotAfter. A transaction that
// started before StartBefore runs to its end.
type Window struct {
	NotBefore   string `json:"notBefore"`
	StartBefore string `json:"startBefore"`
}

// Times are the window's two times, checked: both RFC 3339, NotBefore
// before StartBefore.
func (w Window) Times() (notBefore, startBefore time.Time, err error) {
	if notBefore, err = time.Parse(time.RFC3339, w.NotBefore); err != nil {
		return notBefore, startBefore, fmt.Errorf("the window's notBefore %q is not an RFC 3339 time", w.NotBefore)
	}
	if startBefore, err = time.Parse(time.RFC3339, w.StartBefore); err != nil {
		return notBefore, startBefore, fmt.Errorf("the window's startBefore %q is not an RFC 3339 time", w.StartBefore)
	}
	if !notBefore.Before(startBefore) {
		return notBefore, startBefore, fmt.Errorf("the window's notBefore %s is not before its startBefore %s", w.NotBefore, w.StartBefore)
	}
	return notBefore, startBefore, nil
}

// Artifact is the agent binary a device downloads.
type Artifact struct {
	// URL is the HTTPS URL of the binary's blob in the registry.
	URL      string `json:"url"`
	Digest   string `json:"digest"`
	Size     int64  `json:"size"`
	Platform string `json:"platform"`
}

// attemptSpace is the name space of attempt UUIDs (RFC 9562 name-based,
// SHA-1): the UUID of a name-based UUID over solar's own URL.
var attemptSpace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("https://solar.opendefense.cloud/fleet/attempt"))

var sha256Digest = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)

// Seal checks the attempt and sets its UUID from its complete canonical
// content: the same content always gets the same UUID, other content another.
func (a Attempt) Seal() (Attempt, error) {
	if err := a.check(); err != nil {
		return a, err
	}
	a.UUID = ""
	b, err := json.Marshal(a) // struct fields in a fixed order: canonical
	if err != nil {
		return a, err
	}
	a.UUID = uuid.NewSHA1(attemptSpace, b).String()
	return a, nil
}

// Verify checks the attempt and that its UUID is the one of its content.
func (a Attempt) Verify() error {
	sealed, err := a.Seal()
	if err != nil {
		return err
	}
	if sealed.UUID != a.UUID {
		return fmt.Errorf("attempt %s of device %s: its UUID is not the one of its content (%s)", a.UUID, a.DeviceID, sealed.UUID)
	}
	return nil
}

func (a Attempt) check() error {
	if err := CheckDeviceID(a.DeviceID); err != nil {
		return err
	}
	switch {
	case a.TargetVersion == "":
		return fmt.Errorf("attempt for device %s: no target version", a.DeviceID)
	case !strings.HasPrefix(a.Artifact.URL, "https://"):
		return fmt.Errorf("attempt for device %s: the artifact URL %q is not https", a.DeviceID, a.Artifact.URL)
	case !sha256Digest.MatchString(a.Artifact.Digest):
		return fmt.Errorf("attempt for device %s: the artifact digest %q is not sha256:<64 hex>", a.DeviceID, a.Artifact.Digest)
	case a.Artifact.Size <= 0:
		return fmt.Errorf("attempt for device %s: the artifact size %d is not positive", a.DeviceID, a.Artifact.Size)
	case a.Artifact.Platform == "":
		return fmt.Errorf("attempt for device %s: no platform", a.DeviceID)
	}
	if a.Window != nil {
		if _, _, err := a.Window.Times(); err != nil {
			return fmt.Errorf("attempt for device %s: %w", a.DeviceID, err)
		}
	}
	return nil
}
