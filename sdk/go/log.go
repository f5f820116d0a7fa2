package herald

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"herald.dev/sdk/go/internal/host"
)

// LevelTrace is below slog.LevelDebug: records at it or below go to the
// host as `trace`.
const LevelTrace = slog.Level(-8)

// LogHandler is a slog.Handler writing to the host's log, tagged by the
// host with the plugin's name: the message, then the attributes as
// key=value pairs (values with spaces quoted). Under Register's plugin it
// is slog's default, so slog.Info and friends reach the host.
type LogHandler struct {
	attrs  string
	groups string
	level  slog.Leveler
}

// NewLogHandler is a LogHandler passing records at level or above (nil:
// every record; the host filters by its own configuration too).
func NewLogHandler(level slog.Leveler) *LogHandler {
	if level == nil {
		level = LevelTrace
	}
	return &LogHandler{level: level}
}

// Logger is a *slog.Logger over a LogHandler.
func Logger() *slog.Logger { return slog.New(NewLogHandler(nil)) }

func init() { slog.SetDefault(Logger()) }

// Enabled reports whether the handler passes records at level.
func (h *LogHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// Handle writes one record to the host.
func (h *LogHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, h.groups, a)
		return true
	})
	level := host.LevelError
	switch {
	case r.Level <= LevelTrace:
		level = host.LevelTrace
	case r.Level < slog.LevelInfo:
		level = host.LevelDebug
	case r.Level < slog.LevelWarn:
		level = host.LevelInfo
	case r.Level < slog.LevelError:
		level = host.LevelWarn
	}
	if host.Current == nil {
		// Natively, before a test installed the stand-in host.
		fmt.Fprintf(os.Stderr, "%s %s\n", level, b.String())
		return nil
	}
	host.Current.Log(level, b.String())
	return nil
}

func writeAttr(b *strings.Builder, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			writeAttr(b, p, g)
		}
		return
	}
	v := a.Value.String()
	if v == "" || strings.ContainsAny(v, " \t\n\"=") {
		v = fmt.Sprintf("%q", v)
	}
	b.WriteString(" ")
	b.WriteString(prefix)
	b.WriteString(a.Key)
	b.WriteString("=")
	b.WriteString(v)
}

// WithAttrs returns a handler adding attrs to every record.
func (h *LogHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.attrs)
	for _, a := range attrs {
		writeAttr(&b, h.groups, a)
	}
	return &LogHandler{attrs: b.String(), groups: h.groups, level: h.level}
}

// WithGroup returns a handler qualifying later attributes with name.
func (h *LogHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &LogHandler{attrs: h.attrs, groups: h.groups + name + ".", level: h.level}
}
