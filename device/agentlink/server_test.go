package agentlink

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/solar-pipeline/solar/device/wire"
	"github.com/solar-pipeline/solar/internal/testkit/testenv"
)

// tokenServer is a nats-server with JetStream that logs clients in with a
// token, run from a configuration file of the test's: started, stopped and
// started again on the same port and storage with another token.
type tokenServer struct {
	port, monitor int
	dir           string
	cmd           *exec.Cmd
	logs          *bytes.Buffer
}

func newTokenServer(t *testing.T) *tokenServer {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: runs nats-server")
	}
	testenv.Tool(t, "nats-server")
	s := &tokenServer{port: testenv.FreePort(t), monitor: testenv.FreePort(t), dir: t.TempDir()}
	t.Cleanup(s.stop)
	return s
}

func (s *tokenServer) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", s.port) }

// configure writes the server's configuration: token ("" none) logs in.
func (s *tokenServer) configure(t *testing.T, token string) string {
	t.Helper()
	conf := fmt.Sprintf("listen: \"127.0.0.1:%d\"\nhttp: \"127.0.0.1:%d\"\njetstream { store_dir: %q }\n", s.port, s.monitor, filepath.Join(s.dir, "js"))
	if token != "" {
		conf += fmt.Sprintf("authorization { token: %q }\n", token)
	}
	file := filepath.Join(s.dir, "server.conf")
	require.NoError(t, os.WriteFile(file, []byte(conf), 0o600))
	return file
}

// start runs the server requiring token ("" none) and waits until a client
// with it gets JetStream's answer.
func (s *tokenServer) start(t *testing.T, token string) {
	t.Helper()
	s.logs = new(bytes.Buffer)
	s.cmd = exec.Command("nats-server", "-c", s.configure(t, token))
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, s.cmd.Start())
	s.wait(t, token)
}

// rotate makes the running server require token instead (a configuration
// reload): clients logged in with the old one are disconnected.
func (s *tokenServer) rotate(t *testing.T, token string) {
	t.Helper()
	s.configure(t, token)
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGHUP))
	s.wait(t, token)
}

// wait waits until a client logged in with token gets JetStream's answer.
func (s *tokenServer) wait(t *testing.T, token string) {
	t.Helper()
	require.Eventually(t, func() bool {
		nc, err := nats.Connect(s.url(), nats.Token(token), nats.Timeout(time.Second))
		if err != nil {
			return false
		}
		defer nc.Close()
		js, err := jetstream.New(nc)
		if err != nil {
			return false
		}
		_, err = js.AccountInfo(context.Background())
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "nats-server answers")
}

// stop ends the server and waits for it.
func (s *tokenServer) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	s.cmd = nil
}

// admin is a client of the operator's, logged in with token: the bucket
// solar-fleet, created when missing.
func (s *tokenServer) admin(t *testing.T, token string) jetstream.KeyValue {
	t.Helper()
	nc, err := nats.Connect(s.url(), nats.Token(token), nats.NoReconnect(), nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	kv, err := js.CreateOrUpdateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "solar-fleet", History: 16})
	require.NoError(t, err)
	return kv
}

// putAttempt writes attempt.dev-1 as solar fleet apply does (bound when
// bind is set: uuid.<uuid> names the attempt's artifact's digest).
func putAttempt(t *testing.T, kv jetstream.KeyValue, a wire.Attempt, bind bool) wire.Attempt {
	t.Helper()
	ctx := context.Background()
	a, err := a.Seal()
	require.NoError(t, err)
	d, err := wire.AttemptDigest(a)
	require.NoError(t, err)
	if bind {
		_, err = kv.Put(ctx, "uuid."+a.UUID, []byte(d))
		require.NoError(t, err)
	}
	v, err := json.Marshal(wire.Current{UUID: a.UUID, Digest: d, Attempt: a})
	require.NoError(t, err)
	_, err = kv.Put(ctx, "attempt."+a.DeviceID, v)
	require.NoError(t, err)
	return a
}
