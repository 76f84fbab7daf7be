package safetext_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/brokerpath/brokerpath/internal/safetext"
)

// FuzzBound: whatever the input, the result is valid UTF-8 within the bound,
// holds no control character, and equals the input when that was safe.
func FuzzBound(f *testing.F) {
	for _, s := range []string{"", "ok", "a\nb", "\xff\xfe", "é\u2028", strings.Repeat("é", 200), strings.Repeat("\x00", 100)} {
		f.Add(s, 64)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n%4096 + 1
		if n < 0 {
			n = -n
		}
		got := safetext.BoundN(s, n)
		if len(got) > max(n, 32) {
			t.Fatalf("BoundN(%q, %d) is %d bytes", s, n, len(got))
		}
		if !utf8.ValidString(got) {
			t.Fatalf("BoundN(%q, %d) = %q: invalid UTF-8", s, n, got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 {
				t.Fatalf("BoundN(%q, %d) = %q holds %U", s, n, got, r)
			}
		}
		if got != s && len(s) <= max(n, 32) && safetext.BoundN(s, 1<<30) == s {
			t.Fatalf("BoundN(%q, %d) = %q changed safe text", s, n, got)
		}
	})
}
