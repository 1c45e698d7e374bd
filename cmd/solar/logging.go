package main

import (
	"context"
	"encoding"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// logHandler writes what -v and --debug log for people to read, one line a
// record, as kubectl's and flux's logs read:
//
//	12:04:05.123 INFO  loaded objects=34 errors=0 warnings=1
//
// the local time of day, the level, the message, then the attributes as
// key=value, a value quoted only when it holds a space, a quote, an equals
// sign or a control character (a line never breaks); a group's attributes are
// named group.key.
type logHandler struct {
	mu    *sync.Mutex
	w     io.Writer
	level slog.Leveler
	// attrs are those of WithAttrs, formatted; group is the prefix of the
	// keys of those to come ("a.b.").
	attrs []byte
	group string
}

func newLogHandler(w io.Writer, level slog.Leveler) *logHandler {
	return &logHandler{mu: &sync.Mutex{}, w: w, level: level}
}

func (h *logHandler) Enabled(_ context.Context, l slog.Level) bool {
	return l >= h.level.Level()
}

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	b := make([]byte, 0, 128)
	if !r.Time.IsZero() {
		b = r.Time.AppendFormat(b, "15:04:05.000 ")
	}
	b = fmt.Appendf(b, "%-5s ", r.Level.String())
	b = append(b, message(r.Message)...)
	b = append(b, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		b = appendAttr(b, h.group, a)
		return true
	})
	b = append(b, '\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.w.Write(b)
	return err
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append([]byte(nil), h.attrs...)
	for _, a := range attrs {
		c.attrs = appendAttr(c.attrs, h.group, a)
	}
	return &c
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}

// appendAttr appends " key=value", a group's attributes each under
// prefix+group., an empty attribute not at all.
func appendAttr(b []byte, prefix string, a slog.Attr) []byte {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return b
	}
	if a.Value.Kind() == slog.KindGroup {
		if a.Key != "" {
			prefix += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			b = appendAttr(b, prefix, g)
		}
		return b
	}
	b = append(b, ' ')
	b = append(b, quoted(prefix+a.Key)...)
	b = append(b, '=')
	return append(b, quoted(text(a.Value))...)
}

// text is a value as a string: a time to the millisecond, an error its
// message, what marshals as text that text, anything else as fmt prints it.
func text(v slog.Value) string {
	switch v.Kind() {
	case slog.KindTime:
		return v.Time().Format("2006-01-02T15:04:05.000Z07:00")
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return x.Error()
		case encoding.TextMarshaler:
			if t, err := x.MarshalText(); err == nil {
				return string(t)
			}
		case []byte:
			return string(x)
		}
	}
	return v.String()
}

// quoted is s, in Go's double quotes when it is empty or holds a space, a
// quote, an equals sign or a character that does not print.
func quoted(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '"' || r == '=' || r == utf8.RuneError || !unicode.IsPrint(r)
	}) {
		return strconv.Quote(s)
	}
	return s
}

// message is the message as it is, quoted if it would break the line.
func message(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r == utf8.RuneError || unicode.IsControl(r) }) {
		return strconv.Quote(s)
	}
	return s
}
