package agentlink

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/solar-pipeline/solar/internal/testkit/testenv"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConnectTokenRotated: the device connects with the token its file
// holds, every subscription under its own inbox prefix. The server is told
// to require another token (a reload): it disconnects the device, whose
// old token is then refused again and again, and the connection is not
// given up; once the identity setup writes the new token into the file,
// the next reconnect uses it and the watch resumes. TestLinkResumes
// does the same across a restart. No token reaches the log.
func TestConnectTokenRotated(t *testing.T) {
	s := newTokenServer(t)
	ctx := context.Background()
	oldTok, newTok := "tok-A-"+uuid.NewString(), "tok-B-"+uuid.NewString()
	s.start(t, oldTok)
	kv := s.admin(t, oldTok)
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte(oldTok+"\n"), 0o600))
	var logs testenv.LockedBuffer
	nc, err := Connect(ConnectOptions{Servers: s.url(), DeviceID: "dev-1", TokenFile: file,
		ReconnectWait: 100 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer nc.Close()
	require.Eventually(t, nc.IsConnected, 10*time.Second, 20*time.Millisecond)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	dkv, err := js.KeyValue(ctx, "solar-fleet")
	require.NoError(t, err)
	w, err := dkv.Watch(ctx, "attempt.dev-1")
	require.NoError(t, err)
	defer w.Stop()
	next := func(want string, within time.Duration) {
		t.Helper()
		for deadline := time.After(within); ; {
			select {
			case e := <-w.Updates():
				if e != nil && string(e.Value()) == want {
					return
				}
			case <-deadline:
				t.Fatalf("the watch did not deliver %q; the agent's log:\n%s", want, logs.String())
			}
		}
	}
	_, err = kv.Put(ctx, "attempt.dev-1", []byte("one"))
	require.NoError(t, err)
	next("one", 5*time.Second)
	subs := subscriptions(t, s.monitor, "solar-fleet-agent dev-1")
	require.NotEmpty(t, subs)
	for _, sub := range subs {
		assert.True(t, strings.HasPrefix(sub, "_INBOX_DEVICE.dev-1."), "the device subscribes to %s, outside its inbox", sub)
	}

	s.rotate(t, newTok)
	require.Eventually(t, func() bool { return strings.Count(logs.String(), "authorization violation") >= 3 },
		20*time.Second, 50*time.Millisecond, "the old token is refused at every reconnect")
	assert.False(t, nc.IsClosed(), "refused twice, the connection is not given up")
	require.NoError(t, os.WriteFile(file, []byte(newTok+"\n"), 0o600))
	require.Eventually(t, nc.IsConnected, 10*time.Second, 20*time.Millisecond, "reconnected with the new token")
	_, err = s.admin(t, newTok).Put(ctx, "attempt.dev-1", []byte("two"))
	require.NoError(t, err)
	next("two", 30*time.Second)
	assert.NotContains(t, logs.String(), oldTok)
	assert.NotContains(t, logs.String(), newTok)
}

// subscriptions are the subjects the connection named name subscribes to,
// as the server's monitoring port lists them.
func subscriptions(t *testing.T, monitor int, name string) []string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/connz?subs=1", monitor))
	require.NoError(t, err)
	defer resp.Body.Close()
	var connz struct {
		Connections []struct {
			Name string   `json:"name"`
			Subs []string `json:"subscriptions_list"`
		} `json:"connections"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&connz))
	for _, c := range connz.Connections {
		if c.Name == name {
			return c.Subs
		}
	}
	t.Fatalf("no connection named %q", name)
	return nil
}

// TestReadToken: the token file is a regular file of at most 16 KiB, not a
// link, this user's alone, its token without the whitespace around it;
// errors never quote it.
func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	tok, err := readToken(write("ok", "  s3cret.jwt.value\n"))
	require.NoError(t, err)
	assert.Equal(t, "s3cret.jwt.value", tok)
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	big := strings.Repeat("s3cret", 3000)
	link := filepath.Join(dir, "link")
	require.NoError(t, os.Symlink(write("target", "s3cret.jwt.value"), link))
	shared := write("shared", "s3cret.jwt.value")
	require.NoError(t, os.Chmod(shared, 0o640))
	foreign := write("foreign", "s3cret.jwt.value")
	require.NoError(t, os.Chown(foreign, 4321, -1))
	for name, path := range map[string]string{
		"a symbolic link": link,
		"group-readable":  shared,
		"another owner":   foreign,
		"missing":         filepath.Join(dir, "none"),
		"a folder":        dir,
		"a FIFO":          fifo, // refused, not waited on
		"too big":         write("big", big),
		"empty":           write("empty", " \n"),
	} {
		_, err := readToken(path)
		require.Error(t, err, name)
		assert.NotContains(t, err.Error(), "s3cret", name)
	}
	_, err = Connect(ConnectOptions{Servers: "nats://127.0.0.1:1", DeviceID: "dev-1", TokenFile: filepath.Join(dir, "none")})
	assert.ErrorContains(t, err, "the token file", "a token file that cannot be read is said at once")
	_, err = Connect(ConnectOptions{Servers: "nats://127.0.0.1:1", DeviceID: "dev.1"})
	assert.ErrorContains(t, err, "invalid device id")
}

// TestLinkResumes: the link's NATS server restarts requiring another token,
// which the identity setup wrote into the token file meanwhile. The link
// reconnects with it and watches again at once: an attempt applied
// afterwards is forwarded to the updater. Ready stays reported once, and
// the attempt being forwarded is not forwarded again.
func TestLinkResumes(t *testing.T) {
	s := newTokenServer(t)
	oldTok, newTok := "tok-A-"+uuid.NewString(), "tok-B-"+uuid.NewString()
	s.start(t, oldTok)
	other := "sha256:" + strings.Repeat("b", 64)
	first := putAttempt(t, s.admin(t, oldTok), attemptOf("dev-1", other, "3.0.0"), true)
	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte(oldTok), 0o600))
	nc, err := Connect(ConnectOptions{Servers: s.url(), DeviceID: "dev-1", TokenFile: file, ReconnectWait: 50 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(nc.Close) // after the link's end
	socket := filepath.Join(t.TempDir(), "updater.sock")
	fake := startFakeUpdater(t, socket)
	r := runLink(t, &Link{Conn: nc, Bucket: "solar-fleet", DeviceID: "dev-1", Socket: socket, Version: "2.0.0", Digest: thisDigest}, nil)
	assert.Equal(t, first.UUID, <-fake.got)
	require.Eventually(t, func() bool { return r.readies.Load() == 1 }, 10*time.Second, 10*time.Millisecond)

	s.stop()
	require.NoError(t, os.WriteFile(file, []byte(newTok), 0o600))
	s.start(t, newTok)
	require.Eventually(t, func() bool { return strings.Contains(r.logs.String(), "watching the device's attempt again") },
		5*time.Second, 10*time.Millisecond, "the link watches again once reconnected")
	next := putAttempt(t, s.admin(t, newTok), attemptOf("dev-1", other, "3.0.1"), true)
	select {
	case got := <-fake.got:
		assert.Equal(t, next.UUID, got, "the attempt applied after the restart is forwarded, the one being forwarded not again")
	case <-time.After(5 * time.Second): // nats.go alone: 10 to 20 s
		t.Fatal("the link's watch did not resume")
	}
	assert.Equal(t, int32(1), r.readies.Load())
	assert.NotContains(t, r.logs.String(), oldTok)
	assert.NotContains(t, r.logs.String(), newTok)
}
