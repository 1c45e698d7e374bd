package updater

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// One workload owner: the updater stops what it started, the whole tree.
// A process can leave its process group and its session (setsid, a double
// fork), not its cgroup: moving a process needs write access to a
// cgroup.procs file, and those are root's. So where the updater manages a
// cgroup v2 folder, everything it starts (a probe, a supervised agent) is
// born in a leaf of it (clone3 with CLONE_INTO_CGROUP: no moment outside),
// and stopping it is SIGTERM to every process of the leaf, then cgroup.kill,
// which reaches every descendant, daemons included, and waits until the
// leaf is empty. Without one (no cgroup v2, no cgroup.kill, --cgroup off)
// the updater falls back to sessions (procs.go): what stays in the
// session the updater gave it, or runs an installed binary.

// Cgroup is a cgroup v2 folder the updater manages: its leaves hold what
// it starts. "" is none: the fallback.
type Cgroup string

// Leaves of a Cgroup.
const (
	leafAgent = "agent" // a supervised agent
	leafProbe = "probe" // a probe, while it runs
)

// FindCgroup is the updater's own cgroup folder for the root p: a child
// of the cgroup v2 the updater runs in, named after the root
// (solar-updater-<12 hex of its SHA-256>) so that a restarted updater finds
// the agent it started, and two updaters of two roots do not meet. It is
// made when missing.
func FindCgroup(p Paths) (Cgroup, error) {
	mount, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	own, err := ownCgroup()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(p.Root))
	return OpenCgroup(filepath.Join(mount, own, "solar-updater-"+hex.EncodeToString(sum[:6])))
}

// OpenCgroup makes dir when missing and checks that it is a cgroup v2
// folder, root's, where cgroup.kill is (Linux 5.14).
func OpenCgroup(dir string) (Cgroup, error) {
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", fmt.Errorf("cgroup %s: %w", dir, err)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		return "", fmt.Errorf("cgroup %s: %w", dir, err)
	}
	if fs.Type != unix.CGROUP2_SUPER_MAGIC {
		return "", fmt.Errorf("%s is not in a cgroup v2 file system", dir)
	}
	if err := checkOwnFolder(dir); err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		return "", fmt.Errorf("cgroup %s has no cgroup.kill (Linux 5.14 or later): %w", dir, err)
	}
	return Cgroup(dir), nil
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted
// (/sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1).
func cgroup2Mount() (string, error) {
	b, err := readBeneath(fmt.Sprintf("/proc/%d", os.Getpid()), "mountinfo", 4<<20)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		left, right, ok := strings.Cut(sc.Text(), " - ")
		f, g := strings.Fields(left), strings.Fields(right)
		if ok && len(f) >= 5 && len(g) >= 1 && g[0] == "cgroup2" && f[3] == "/" {
			return f[4], nil
		}
	}
	return "", errors.New("no cgroup v2 file system is mounted")
}

// ownCgroup is this process's cgroup v2 ("0::/path").
func ownCgroup() (string, error) {
	b, err := readBeneath(fmt.Sprintf("/proc/%d", os.Getpid()), "cgroup", 64<<10)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if path, ok := strings.CutPrefix(line, "0::"); ok && strings.HasPrefix(path, "/") {
			return path, nil
		}
	}
	return "", errors.New("this process is in no cgroup v2")
}

// leaf is the folder of a leaf.
func (c Cgroup) leaf(name string) string { return filepath.Join(string(c), name) }

// place makes the leaf when missing and has cmd born in it. The returned
// function closes the leaf's descriptor: call it once cmd started.
func (c Cgroup) place(cmd *exec.Cmd, name string) (func(), error) {
	dir := c.leaf(name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	return func() { unix.Close(fd) }, nil
}

// populated: a process of the leaf lives. A leaf that is not there holds
// none.
func (c Cgroup) populated(name string) (bool, error) {
	b, err := readBeneath(c.leaf(name), "cgroup.events", 4<<10)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return !strings.Contains("\n"+string(b), "\npopulated 0"), nil
}

// stop stops every process of the leaf: SIGTERM, and cgroup.kill (SIGKILL
// to the whole leaf, descendants born meanwhile included) after limit, and
// removes the leaf once it is empty: the next start makes it anew. (A leaf
// that was killed is never used again: Linux 6.18 kills at birth a process
// cloned into a cgroup whose kill count is not its parent's.) It returns
// with ctx's error, or when the leaf is not empty after killWait. Without a
// cgroup it does nothing.
func (c Cgroup) stop(ctx context.Context, name string, limit time.Duration) error {
	if c == "" {
		return nil
	}
	if err := c.empty(ctx, name, limit); err != nil {
		return err
	}
	for deadline := time.Now().Add(killWait); ; {
		err := os.Remove(c.leaf(name))
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// empty ends every process of the leaf (stop).
func (c Cgroup) empty(ctx context.Context, name string, limit time.Duration) error {
	if on, err := c.populated(name); err != nil || !on {
		return err
	}
	if limit > 0 {
		c.signal(name, unix.SIGTERM)
		if err := c.waitEmpty(ctx, name, limit); err == nil {
			return nil
		} else if ctx.Err() != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(c.leaf(name), "cgroup.kill"), []byte("1"), 0); err != nil {
		return err
	}
	return c.waitEmpty(ctx, name, killWait)
}

// killWait bounds the wait for killed processes to be gone (one stuck in
// the kernel is not).
const killWait = 10 * time.Second

// waitEmpty waits until the leaf holds no process, at most limit.
func (c Cgroup) waitEmpty(ctx context.Context, name string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		on, err := c.populated(name)
		if err != nil || !on {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("processes of cgroup %s still run after %s", c.leaf(name), limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// signal sends sig to every process of the leaf, each through a pidfd
// opened before the leaf is listed again: a pid listed twice whose pidfd
// refers to a live process is that process (a pid reused meanwhile is not
// signalled).
func (c Cgroup) signal(name string, sig unix.Signal) {
	fds := map[int]int{}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for _, pid := range c.procs(name) {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			fds[pid] = fd
		}
	}
	for _, pid := range c.procs(name) {
		if fd, ok := fds[pid]; ok {
			_ = unix.PidfdSendSignal(fd, sig, nil, 0)
		}
	}
}

// procs lists the leaf's processes.
func (c Cgroup) procs(name string) []int {
	b, _ := readBeneath(c.leaf(name), "cgroup.procs", 1<<20)
	var pids []int
	for _, field := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(field); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Remove stops nothing: it removes the empty leaves and the folder, for an
// updater that is uninstalled (and the tests).
func (c Cgroup) Remove() error {
	if c == "" {
		return nil
	}
	for _, name := range []string{leafAgent, leafProbe} {
		if err := os.Remove(c.leaf(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	if err := os.Remove(string(c)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// runTree runs cmd, which makes a session of its own (Setsid), to its end,
// and then stops what it left behind, before it is reaped: the cgroup's
// probe leaf emptied, or, in the fallback, the session killed (its id,
// the process's, is not reused while the process is not reaped).
func (u *Updater) runTree(cmd *exec.Cmd) error {
	c := u.opts.Cgroup
	if c != "" {
		placed, err := c.place(cmd, leafProbe)
		if err != nil {
			return err
		}
		defer placed()
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == unix.EINTR {
	}
	var err error
	if c != "" {
		err = c.stop(context.Background(), leafProbe, 0)
	} else {
		err = killSession(cmd.Process.Pid)
	}
	if werr := cmd.Wait(); werr != nil {
		return werr
	}
	return err
}
