package safetext

import (
	"context"
	"fmt"
	"log/slog"
)

// NewHandler wraps h so that every record's message and every string
// attribute (errors and fmt.Stringers are rendered to strings first, groups
// are walked) is escaped and cut to LogMax bytes before h sees it. Other
// kinds of values pass through. A handler already wrapped is returned as it
// is.
func NewHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(*handler); ok {
		return h
	}
	return &handler{next: h}
}

// Logger returns l with its handler wrapped by NewHandler; nil stays nil.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return nil
	}
	if _, ok := l.Handler().(*handler); ok {
		return l
	}
	return slog.New(NewHandler(l.Handler()))
}

type handler struct{ next slog.Handler }

var _ slog.Handler = (*handler)(nil)

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, BoundN(r.Message, LogMax), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(boundAttr(a))
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	b := make([]slog.Attr, len(as))
	for i, a := range as {
		b[i] = boundAttr(a)
	}
	return &handler{next: h.next.WithAttrs(b)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{next: h.next.WithGroup(BoundN(name, LogMax))}
}

func boundAttr(a slog.Attr) slog.Attr {
	a.Key = BoundN(a.Key, LogMax)
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(BoundN(v.String(), LogMax))
	case slog.KindGroup:
		g := v.Group()
		b := make([]slog.Attr, len(g))
		for i, x := range g {
			b[i] = boundAttr(x)
		}
		a.Value = slog.GroupValue(b...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			a.Value = slog.StringValue(BoundN(x.Error(), LogMax))
		case fmt.Stringer:
			a.Value = slog.StringValue(BoundN(x.String(), LogMax))
		case []byte:
			a.Value = slog.StringValue(BoundN(string(x), LogMax))
		default:
			a.Value = v
		}
	default:
		a.Value = v
	}
	return a
}
