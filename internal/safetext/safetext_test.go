package safetext_test

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brokerpath/brokerpath/internal/safetext"
)

func TestBound(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "order rejected: insufficient margin", "order rejected: insufficient margin"},
		{"newline", "bad\nINFO order ACCEPTED", `bad\nINFO order ACCEPTED`},
		{"escape", "a\x1b[31mred\r", `a\x1b[31mred\r`},
		{"tab", "a\tb", `a\tb`},
		{"invalid utf8", "a\xffb", `a\xffb`},
		{"separators", "a\u2028b\u202ec", `a\u2028b\u202ec`},
		{"unicode kept", "prix: 12 €, 東京", "prix: 12 €, 東京"},
		{"one MiB", long, strings.Repeat("x", safetext.Max-len("…(1048576 bytes)")) + "…(1048576 bytes)"},
		{"exactly Max", strings.Repeat("y", safetext.Max), strings.Repeat("y", safetext.Max)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := safetext.Bound(tc.in)
			if got != tc.want {
				t.Fatalf("Bound(%.40q) = %.300q, want %.300q", tc.in, got, tc.want)
			}
			if len(got) > safetext.Max {
				t.Fatalf("len %d > %d", len(got), safetext.Max)
			}
		})
	}
}

// A cut never splits a rune or an escape.
func TestBoundCutsOnBoundaries(t *testing.T) {
	for _, unit := range []string{"é", "東", "\n", "\x00", "ab\u2028"} {
		got := safetext.Bound(strings.Repeat(unit, 500))
		if !utf8.ValidString(got) || len(got) > safetext.Max {
			t.Fatalf("%q: %q (%d bytes)", unit, got, len(got))
		}
		body, _, ok := strings.Cut(got, "…(")
		if !ok {
			t.Fatalf("%q: no length note in %q", unit, got)
		}
		if strings.HasSuffix(body, `\`) || strings.HasSuffix(body, `\x0`) || strings.HasSuffix(body, `\u202`) {
			t.Fatalf("%q: cut inside an escape: %q", unit, got)
		}
	}
}

func TestErrorKeepsTheChain(t *testing.T) {
	base := &fs.PathError{Op: "open", Path: strings.Repeat("p", 5000), Err: fs.ErrNotExist}
	err := safetext.Error(base, safetext.Max)
	if len(err.Error()) > safetext.Max {
		t.Fatalf("Error() is %d bytes", len(err.Error()))
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("errors.Is lost the chain")
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe != base {
		t.Fatal("errors.As lost the chain")
	}
	short := errors.New("short")
	if safetext.Error(short, safetext.Max) != short {
		t.Fatal("a safe error was wrapped")
	}
	if safetext.Error(nil, safetext.Max) != nil {
		t.Fatal("nil became non-nil")
	}
}

// Under the wrapper a forged log line stays on its line, and a 1 MiB value
// is cut.
func TestHandlerEscapesAndBounds(t *testing.T) {
	var buf bytes.Buffer
	log := safetext.Logger(slog.New(slog.NewTextHandler(&buf, nil)))
	forged := "logout\n" + `time=2026-01-01T00:00:00Z level=INFO msg="order ACCEPTED"`
	log.Warn("fix: "+forged, "text", forged, "err", errors.New(forged), "big", strings.Repeat("z", 1<<20),
		slog.Group("g", "inner", forged))
	log.With("with", forged).Info("second")
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 2 {
		t.Fatalf("%d lines, want 2:\n%s", n, out)
	}
	if len(out) > 4*safetext.LogMax+2000 {
		t.Fatalf("output is %d bytes", len(out))
	}
	if !strings.Contains(out, "(1048576 bytes)") {
		t.Fatalf("no length note:\n%.500s", out)
	}
	if safetext.Logger(log) != log {
		t.Fatal("wrapped twice")
	}
}
