package updater

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/solar-pipeline/solar/device/wire"
)

// maxRequest bounds a request: an attempt is a few hundred bytes.
const maxRequest = 64 << 10

// Listen makes the socket at Paths.Socket, readable and writable by its
// owner and group gid only (the agent's group), in a folder that group may
// enter but only root may write. The folder is made anew, root's alone,
// until the socket is listening with its group and mode; the socket is
// bound under a temporary name and renamed into place, so that a peer that
// finds Paths.Socket can connect. Paths are used only inside folders that
// nobody but root can write: nobody can swap an entry under them.
func Listen(p Paths, gid int) (*net.UnixListener, error) {
	dir := p.SocketDir()
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, err
	}
	tmp := filepath.Join(dir, ".updater.sock.new")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(false)
	for _, step := range []func() error{
		func() error { return os.Chown(tmp, -1, gid) },
		func() error { return os.Chmod(tmp, 0o660) },
		func() error { return os.Rename(tmp, p.Socket()) },
		func() error { return os.Chown(dir, -1, gid) },
		func() error { return os.Chmod(dir, 0o750) },
	} {
		if err := step(); err != nil {
			l.Close()
			return nil, err
		}
	}
	return l, nil
}

// maxConns bounds the connections served at once; more are closed.
const maxConns = 8

// Serve accepts the agent's connections until ctx ends: a peer whose group
// (primary or supplementary) is not gid is refused; a peer that sends
// anything but one attempt is refused. For an attempt, every outcome is
// written back as a JSON line, the final one last, and the connection closed.
// Connections are read side by side; attempts are carried out one at a
// time, and the newest attempt preempts one still being prepared (a switch
// once begun ends first). Serve returns once the attempt under way ended.
func (u *Updater) Serve(ctx context.Context, l *net.UnixListener, gid int) error {
	go func() {
		<-ctx.Done()
		l.Close()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, maxConns)
	for {
		conn, err := l.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case slots <- struct{}{}:
		default:
			u.opts.Log.Warn("refused a connection: too many at once", "max", maxConns)
			conn.Close()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			u.serveConn(ctx, conn, gid)
		}()
	}
}

// preempt makes cancel the newest connection's and cancels the one before.
func (u *Updater) preempt(cancel context.CancelFunc) {
	u.newest.Lock()
	defer u.newest.Unlock()
	if u.newest.cancel != nil {
		u.newest.cancel()
	}
	u.newest.cancel = cancel
}

func (u *Updater) serveConn(ctx context.Context, conn *net.UnixConn, gid int) {
	defer conn.Close()
	enc := json.NewEncoder(conn)
	refuse := func(err error) {
		u.opts.Log.Warn("refused a connection on the socket", "err", err)
		_ = enc.Encode(wire.Outcome{State: wire.StateRefused, Reason: err.Error()})
	}
	if err := peerInGroup(conn, gid); err != nil {
		refuse(err)
		return
	}
	// A peer that holds the connection without a request does not hold
	// the updater.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReaderSize(conn, maxRequest).ReadSlice('\n')
	switch {
	case errors.Is(err, bufio.ErrBufferFull):
		refuse(fmt.Errorf("the request is larger than %d bytes", maxRequest))
		return
	case err != nil && len(line) == 0:
		refuse(fmt.Errorf("reading the request: %w", err))
		return
	}
	_ = conn.SetReadDeadline(time.Time{})
	var req wire.Request
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil || req.Attempt == nil {
		refuse(fmt.Errorf("not an attempt: the updater accepts {\"attempt\": {...}} and nothing else"))
		return
	}
	// A peer that goes away before the switch takes its attempt with it,
	// and a newer attempt replaces it: the download stops (Handle finishes
	// a switch once begun).
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		defer cancel()
		_, _ = io.Copy(io.Discard, conn)
	}()
	u.preempt(cancel)
	u.handle(ctx, *req.Attempt, func(o wire.Outcome) {
		// A peer that stops reading does not hold the updater.
		_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_ = enc.Encode(o)
	})
}

// peerInGroup checks the connected process's credentials (SO_PEERCRED): its
// group, or one of its supplementary groups, must be gid.
func peerInGroup(conn *net.UnixConn, gid int) error {
	raw, err := conn.SyscallConn()
	if err != nil {
		return err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if cerr != nil {
		return cerr
	}
	if int(cred.Gid) == gid {
		return nil
	}
	groups, err := supplementaryGroups(int(cred.Pid))
	if err != nil {
		return fmt.Errorf("peer pid %d: %w", cred.Pid, err)
	}
	if slices.Contains(groups, gid) {
		return nil
	}
	return fmt.Errorf("peer uid %d gid %d (pid %d) is not in group %d", cred.Uid, cred.Gid, cred.Pid, gid)
}

// supplementaryGroups reads the Groups line of /proc/PID/status.
func supplementaryGroups(pid int) ([]int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Groups:"); ok {
			var out []int
			for _, f := range strings.Fields(rest) {
				if g, err := strconv.Atoi(f); err == nil {
					out = append(out, g)
				}
			}
			return out, nil
		}
	}
	return nil, nil
}
