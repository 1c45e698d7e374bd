package main

import (
	"bytes"
	"errors"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"testing/slogtest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVerboseLog: -v logs for people, time of day, level, message, then
// key=value, one line a record; without -v nothing of it.
func TestVerboseLog(t *testing.T) {
	code, _, stderr := solar(t, "vet", "-v", "../../examples")
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d\.\d{3} INFO  skipped 2 files that hold no Kubernetes objects$`, stderr)
	assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d\.\d{3} INFO  loaded objects=\d+ errors=0 warnings=1$`, stderr)
	assert.NotContains(t, stderr, "level=")
	assert.NotContains(t, stderr, "msg=")

	code, _, stderr = solar(t, "vet", "../../examples")
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "INFO")
}

// TestVerboseHandlerValues: values are quoted only when they must be, and a
// record stays one line.
func TestVerboseHandlerValues(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newLogHandler(&buf, slog.LevelDebug))
	at := time.Date(2026, 3, 4, 5, 6, 7, 891e6, time.Local)
	r := slog.NewRecord(at, slog.LevelWarn, "two\nlines", 0)
	r.AddAttrs(slog.String("plain", "alpha/edge-1"), slog.String("spaced", "a b"), slog.String("empty", ""),
		slog.String("eq", "a=b"), slog.String("quote", `say "hi"`), slog.Any("error", errors.New("it failed")),
		slog.Duration("took", 1500*time.Millisecond), slog.Int("n", 3), slog.Bool("ok", true), slog.String("é", "ünïcode"),
		slog.Group("g", slog.String("k", "v"), slog.Group("h", slog.Int("x", 1))), slog.Group("empty"), slog.Attr{})
	require.NoError(t, log.Handler().Handle(t.Context(), r))
	assert.Equal(t, `05:06:07.891 WARN  "two\nlines" plain=alpha/edge-1 spaced="a b" empty="" eq="a=b" quote="say \"hi\"" `+
		`error="it failed" took=1.5s n=3 ok=true é=ünïcode g.k=v g.h.x=1`+"\n", buf.String())

	buf.Reset()
	log.With("a", 1).WithGroup("run").With("b", "x y").Debug("done", "c", 2)
	assert.Regexp(t, `^\d\d:\d\d:\d\d\.\d{3} DEBUG done a=1 run.b="x y" run.c=2\n$`, buf.String())

	buf.Reset()
	slog.New(newLogHandler(&buf, slog.LevelInfo)).Debug("hidden")
	assert.Empty(t, buf.String(), "below the level")
}

// TestVerboseHandler is slog's own test of a Handler's contract.
func TestVerboseHandler(t *testing.T) {
	var buf bytes.Buffer
	slogtest.Run(t, func(*testing.T) slog.Handler {
		buf.Reset()
		return newLogHandler(&buf, slog.LevelInfo)
	}, func(t *testing.T) map[string]any {
		return parseLogLine(t, buf.String())
	})
}

var logLine = regexp.MustCompile(`^(?:(\d\d:\d\d:\d\d\.\d{3}) )?([A-Z]+[+-]?\d*) +(.*)\n$`)

// parseLogLine reads a line of logHandler back into slogtest's map: the
// message runs up to the first key=value, keys a.b are nested maps.
func parseLogLine(t *testing.T, line string) map[string]any {
	m := logLine.FindStringSubmatch(line)
	require.NotNil(t, m, "one line: %q", line)
	out := map[string]any{slog.LevelKey: m[2]}
	if m[1] != "" {
		out[slog.TimeKey] = m[1]
	}
	fields := splitQuoted(m[3])
	var msg []string
	for len(fields) > 0 && !strings.Contains(fields[0], "=") {
		msg, fields = append(msg, fields[0]), fields[1:]
	}
	out[slog.MessageKey] = strings.Join(msg, " ")
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		at, path := out, strings.Split(k, ".")
		for _, p := range path[:len(path)-1] {
			if _, ok := at[p].(map[string]any); !ok {
				at[p] = map[string]any{}
			}
			at = at[p].(map[string]any)
		}
		at[path[len(path)-1]] = v
	}
	return out
}

// splitQuoted splits s at spaces outside Go double quotes.
func splitQuoted(s string) []string {
	var out []string
	var cur strings.Builder
	in, esc := false, false
	for _, r := range s {
		switch {
		case esc:
			esc = false
		case in && r == '\\':
			esc = true
		case r == '"':
			in = !in
		case r == ' ' && !in:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(r)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}
