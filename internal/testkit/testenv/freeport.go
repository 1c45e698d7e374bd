package testenv

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
)

// given are the ports FreePort returned in this process, each with the open
// file whose lock reserves it from every other test process until this one
// ends.
var given = struct {
	sync.Mutex
	ports map[int]*os.File
}{ports: map[int]*os.File{}}

// FreePort returns a port nothing listens on now, that it has not returned
// before and that no other test process holds: a port closed again goes
// back to the kernel, which may hand it out twice (source-controller's
// artifact server and its health probe once got the same one).
//
// It is picked at random below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range, 32768 on Linux): between
// FreePort and the server's bind, no outgoing connection of another test
// process can take it as its source port (a NATS cluster of a fresh-clone
// run once failed to form so, its route port taken). And go test runs
// packages side by side: each port is reserved by an exclusive lock on a
// file named after it (portLocks), held until the process exits, so two
// packages never start servers on the same port (a fresh-clone run's API
// server once lost its port to another package's, and its readiness check
// met the other's certificate).
func FreePort(t testing.TB) int {
	t.Helper()
	given.Lock()
	defer given.Unlock()
	dir := portLocks(t)
	for range 10000 {
		port := freeLow + rand.IntN(freeHigh-freeLow)
		if given.ports[port] != nil {
			continue
		}
		lock, ok := reserve(dir, port)
		if !ok {
			continue
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			lock.Close()
			continue
		}
		l.Close()
		given.ports[port] = lock
		return port
	}
	t.Fatalf("no free port in [%d, %d)", freeLow, freeHigh)
	return 0
}

// The range FreePort picks from: below Linux's ephemeral ports, above the
// ports services and developers commonly use.
const freeLow, freeHigh = 20000, 32768

// portLocks is the directory of the ports' lock files, shared by every test
// process on the machine (sticky and writable by all, as /tmp is).
func portLocks(t testing.TB) string {
	dir := filepath.Join(os.TempDir(), "solar-test-ports")
	err := os.Mkdir(dir, 0o700)
	if err == nil {
		err = os.Chmod(dir, 0o777|os.ModeSticky)
	}
	if err != nil && !os.IsExist(err) {
		t.Fatalf("port reservations: %v", err)
	}
	return dir
}

// reserve takes the exclusive lock on port's file without waiting; the kernel
// lets it go when the file is closed or the process ends, however it ends.
func reserve(dir string, port int) (*os.File, bool) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return f, true
}
