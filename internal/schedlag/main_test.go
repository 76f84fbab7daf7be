package main

import (
	"strings"
	"testing"
	"time"
)

// The factor is how many times longer busy work takes: 1/share rounded up,
// within [1, 6]; no spin reads as an idle host.
func TestFactor(t *testing.T) {
	for _, c := range []struct {
		shares []float64
		want   int
	}{
		{nil, 1},
		{[]float64{1}, 1},
		{[]float64{0.97}, 1},
		{[]float64{0.5}, 2},
		{[]float64{0.39}, 3},
		{[]float64{0.27, 0.9, 0.1}, 4}, // the median, 0.27
		{[]float64{0.1}, 6},
		{[]float64{0}, 6},
	} {
		f := figures{shares: c.shares}
		if got := f.factor(); got != c.want {
			t.Errorf("shares %v: factor %d, want %d", c.shares, got, c.want)
		}
	}
}

// The line make test parses names the share and the factor.
func TestStringHasWhatMakeParses(t *testing.T) {
	s := figures{wall: 3 * time.Second, worst: 40 * time.Millisecond, shares: []float64{0.27}}.String()
	for _, want := range []string{"got 27% of a CPU", "factor=4"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q lacks %q", s, want)
		}
	}
}
