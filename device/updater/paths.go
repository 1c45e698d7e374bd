package updater

import (
	"path/filepath"
	"strings"
)

// Paths derives every path the updater manages from one root folder: nothing
// in an attempt names a path. Who may write where:
//
//	ROOT/                  root, 0755: the journal, the agent link
//	ROOT/journal.json      root, 0600
//	ROOT/versions/<hex>/   root, 0755: the installed binaries
//	ROOT/log/agent.log     root, 0700/0600: a supervised agent's output
//	ROOT/sock/updater.sock root:group, 0750/0660: the agent's way in
//	ROOT/run/ready         the agent's own folder (--agent-uid): read by the
//	                       updater only without following links, capped
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

// Run is the agent's folder: the only one under the root it may write.
func (p Paths) Run() string { return filepath.Join(p.Root, "run") }

// Ready is the file the running agent writes once ready: its version and
// process id.
func (p Paths) Ready() string { return filepath.Join(p.Run(), "ready") }

// Log is where a supervised agent's output goes, in a folder only root
// reads and writes.
func (p Paths) Log() string { return filepath.Join(p.Root, "log", "agent.log") }

// SocketDir holds the socket: root's, entered by the agent's group, written
// by nobody else.
func (p Paths) SocketDir() string { return filepath.Join(p.Root, "sock") }

// Socket is the Unix socket the device's agent forwards attempts over.
func (p Paths) Socket() string { return filepath.Join(p.SocketDir(), "updater.sock") }
