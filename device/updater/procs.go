package updater

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Agents are found by what they run, never by a file the agent can write:
// a process is an agent when its executable is an installed binary
// (Paths.Versions, which only root writes) and, when the agent runs as its
// own user, its real uid is that user's. A process is signalled through a
// pidfd opened before it is checked again, so a pid reused in between is
// never signalled.

// agentProcesses lists the live agents: their pids and executables.
func agentProcesses(p Paths, uid int) map[int]string {
	out := map[int]string{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if exe, ok := isAgent(p, pid, uid); ok {
			out[pid] = exe
		}
	}
	return out
}

// isAgent: pid is a live, non-zombie process running an installed binary,
// as uid when uid >= 0. exe is the binary's path.
func isAgent(p Paths, pid, uid int) (exe string, ok bool) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil || !strings.HasPrefix(exe, p.Versions()+"/") || !sameFile(p, pid, exe) {
		return "", false
	}
	b, err := readBeneath(fmt.Sprintf("/proc/%d", pid), "status", 1<<16)
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "State:") && strings.Contains(line, "zombie"):
			return "", false
		case strings.HasPrefix(line, "Uid:") && uid >= 0:
			if f := strings.Fields(line); len(f) < 2 || f[1] != strconv.Itoa(uid) {
				return "", false
			}
		}
	}
	return strings.TrimSuffix(exe, " (deleted)"), true
}

// sameFile: the process's executable is the file at exe as this process
// sees it, not a file of that name in a mount namespace of the process's
// own (an unprivileged user namespace may mount anything over versions/).
// An installed binary removed since it started counts by its namespace.
func sameFile(p Paths, pid int, exe string) bool {
	self, err1 := os.Readlink("/proc/self/ns/mnt")
	theirs, err2 := os.Readlink(fmt.Sprintf("/proc/%d/ns/mnt", pid))
	if err1 != nil || err2 != nil || self != theirs {
		return false
	}
	running, err := os.Stat(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return false
	}
	installed, err := os.Stat(strings.TrimSuffix(exe, " (deleted)"))
	if err != nil {
		return strings.HasSuffix(exe, " (deleted)")
	}
	return os.SameFile(running, installed)
}

// stopAgents stops every agent: SIGTERM, and SIGKILL to those alive after
// limit. It returns once none is left, or with ctx's error.
func stopAgents(ctx context.Context, p Paths, uid int, limit time.Duration) error {
	for pass := 0; pass < 3; pass++ {
		procs := agentProcesses(p, uid)
		if len(procs) == 0 {
			return nil
		}
		var fds []int
		for pid := range procs {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue // gone already
			}
			if _, ok := isAgent(p, pid, uid); !ok { // the pid was reused
				unix.Close(fd)
				continue
			}
			_ = unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0)
			fds = append(fds, fd)
		}
		err := waitExit(ctx, fds, limit)
		for _, fd := range fds {
			unix.Close(fd)
		}
		if err != nil {
			return err
		}
	}
	if procs := agentProcesses(p, uid); len(procs) > 0 {
		return fmt.Errorf("%d agent processes are still running", len(procs))
	}
	return nil
}

// waitExit waits until every pidfd's process has exited, killing those
// alive after limit.
func waitExit(ctx context.Context, fds []int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	killed := false
	for {
		alive := 0
		for _, fd := range fds {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, err := unix.Poll(pfd, 0); err == nil && n == 0 {
				alive++
				if killed {
					_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
				}
			} else if err != nil && !errors.Is(err, syscall.EINTR) {
				return err
			}
		}
		if alive == 0 {
			return nil
		}
		killed = killed || time.Now().After(deadline)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
