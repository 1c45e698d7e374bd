package updater

import (
	"path/filepath"
	"strings"
)

// Paths derives every path the updater manages from one root folder: nothing
// in an attempt names a path.
type Paths struct{ Root string }

// Journal is the journal file.
func (p Paths) Journal() string { return filepath.Join(p.Root, "journal.json") }

// Versions holds one folder per installed digest.
func (p Paths) Versions() string { return filepath.Join(p.Root, "versions") }

// Version is the folder of a digest's binary (sha256:HEX → versions/HEX).
func (p Paths) Version(digest string) string {
	return filepath.Join(p.Versions(), strings.TrimPrefix(digest, "sha256:"))
}

// Binary is the installed binary of a digest.
func (p Paths) Binary(digest string) string { return filepath.Join(p.Version(digest), "agent") }

// Staging is where a digest's binary is written before it is selectable.
func (p Paths) Staging(digest string) string {
	return filepath.Join(p.Versions(), ".staging-"+strings.TrimPrefix(digest, "sha256:"))
}

// Current is the symlink the service runs: the selected binary.
func (p Paths) Current() string { return filepath.Join(p.Root, "agent") }

// Ready is the file the running agent writes once ready: its version and
// process id.
func (p Paths) Ready() string { return filepath.Join(p.Root, "run", "ready") }

// Socket is the Unix socket the device's agent forwards attempts over.
func (p Paths) Socket() string { return filepath.Join(p.Root, "run", "updater.sock") }
