package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
)

// maxLogValue bounds each value a warning quotes.
const maxLogValue = 300

// warnHandler shows cadence's log records among the human output of run
// and resume as `cadence check` shows its warnings: one line,
// "cadence: warning: message (key value, …)", each value cleaned of
// terminal control codes and cut (a value may quote an agent). Records
// below its level are dropped; CADENCE_DEBUG gets slog's own text lines.
type warnHandler struct {
	w     io.Writer
	mu    *sync.Mutex
	level slog.Level
	attrs []slog.Attr
	group string
}

func newWarnHandler(w io.Writer, level slog.Level) *warnHandler {
	return &warnHandler{w: w, mu: &sync.Mutex{}, level: level}
}

func (h *warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *warnHandler) Handle(_ context.Context, r slog.Record) error {
	word := "warning"
	if r.Level >= slog.LevelError {
		word = "error"
	}
	var parts []string
	add := func(key string, v slog.Value) {
		parts = append(parts, clean(key, 60)+" "+clean(v.Resolve().String(), maxLogValue))
	}
	for _, a := range h.attrs { // keys already carry their groups
		add(a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		if !a.Equal(slog.Attr{}) {
			add(h.group+a.Key, a.Value)
		}
		return true
	})
	line := "cadence: " + word + ": " + clean(r.Message, maxLogValue)
	if len(parts) > 0 {
		line += " (" + strings.Join(parts, ", ") + ")"
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := fmt.Fprintln(h.w, line)
	return err
}

func (h *warnHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	for i := len(h.attrs); i < len(c.attrs); i++ {
		c.attrs[i].Key = h.group + c.attrs[i].Key
	}
	return &c
}

func (h *warnHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.group = h.group + name + "."
	return &c
}
