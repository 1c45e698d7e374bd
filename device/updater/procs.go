package updater

import (
	"bytes"
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
// own user, its real uid is that user's. Stopping an agent stops the
// session it leads too (its descendants that stayed in it; the cgroup
// holds those that left: cgroup.go). A process is signalled through a
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
	if err != nil || !strings.HasPrefix(exe, p.Versions()+"/") || !sameFile(p, pid, exe) || !liveAs(pid, uid) {
		return "", false
	}
	return strings.TrimSuffix(exe, " (deleted)"), true
}

// liveAs: pid is a live, non-zombie process, of the real uid uid when
// uid >= 0.
func liveAs(pid, uid int) bool {
	b, err := readBeneath(fmt.Sprintf("/proc/%d", pid), "status", 1<<16)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(line, "State:") && strings.Contains(line, "zombie"):
			return false
		case strings.HasPrefix(line, "Uid:") && uid >= 0:
			if f := strings.Fields(line); len(f) < 2 || f[1] != strconv.Itoa(uid) {
				return false
			}
		}
	}
	return true
}

// sessionOf is the session of pid, -1 when it is gone.
func sessionOf(pid int) int {
	b, err := readBeneath(fmt.Sprintf("/proc/%d", pid), "stat", 4<<10)
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:])) // state ppid pgrp session ...
	if len(f) < 4 {
		return -1
	}
	sid, err := strconv.Atoi(f[3])
	if err != nil {
		return -1
	}
	return sid
}

// sessionMembers lists the live processes of the sessions sids (of uid
// when uid >= 0), the fallback's process tree: the supervisor starts an
// agent in a session of its own, which only its descendants can join; a
// descendant that makes a session of its own leaves it (a cgroup holds
// it: cgroup.go).
func sessionMembers(sids map[int]bool, uid int) []int {
	var pids []int
	if len(sids) == 0 {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && sids[sessionOf(pid)] && liveAs(pid, uid) {
			pids = append(pids, pid)
		}
	}
	return pids
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

// stopAgents stops every agent and every process of a session an agent
// leads: SIGTERM, and SIGKILL to those alive after limit. It returns once
// none is left, or with ctx's error.
func stopAgents(ctx context.Context, p Paths, uid int, limit time.Duration) error {
	for pass := 0; pass < 3; pass++ {
		procs := stoppable(p, uid)
		if len(procs) == 0 {
			return nil
		}
		var fds []int
		for pid, still := range procs {
			fd, err := unix.PidfdOpen(pid, 0)
			if err != nil {
				continue // gone already
			}
			if !still() { // the pid was reused
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
	if procs := stoppable(p, uid); len(procs) > 0 {
		return fmt.Errorf("%d agent processes are still running", len(procs))
	}
	return nil
}

// stoppable are the agents and the members of the sessions they lead, each
// with its check, made again once a pidfd holds it, that the pid is still
// that process.
func stoppable(p Paths, uid int) map[int]func() bool {
	out := map[int]func() bool{}
	sids := map[int]bool{}
	for pid := range agentProcesses(p, uid) {
		out[pid] = func() bool { _, ok := isAgent(p, pid, uid); return ok }
		if sessionOf(pid) == pid {
			sids[pid] = true
		}
	}
	for _, pid := range sessionMembers(sids, uid) {
		if out[pid] == nil {
			sid := sessionOf(pid)
			out[pid] = func() bool { return sessionOf(pid) == sid && liveAs(pid, uid) }
		}
	}
	return out
}

// killSession kills every process of the session sid, whose leader has
// exited and is not reaped yet (so sid is nobody else's), and waits until
// they are gone, at most killWait.
func killSession(sid int) error {
	var fds []int
	for _, pid := range sessionMembers(map[int]bool{sid: true}, -1) {
		if fd, err := unix.PidfdOpen(pid, 0); err == nil {
			if sessionOf(pid) == sid {
				fds = append(fds, fd)
			} else {
				unix.Close(fd)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), killWait)
	defer cancel()
	err := waitExit(ctx, fds, 0)
	for _, fd := range fds {
		unix.Close(fd)
	}
	return err
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
