package venuedoc_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/venue"
	"github.com/brokerpath/brokerpath/venue/internal/venuedoc"
)

const stub = "# title\n\nintro\n\n" + venuedoc.Begin + "\nstale\n" + venuedoc.End + "\n\n## next\n"

func fresh(t *testing.T) string {
	t.Helper()
	s, err := venuedoc.Splice(stub, venuedoc.Section())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSpliceKeepsTheRestAndIsIdempotent(t *testing.T) {
	s := fresh(t)
	if !strings.HasPrefix(s, "# title\n\nintro\n\n"+venuedoc.Begin+"\n") || !strings.HasSuffix(s, venuedoc.End+"\n\n## next\n") {
		t.Fatalf("text around the markers changed:\n%s", s)
	}
	if strings.Contains(s, "stale") {
		t.Fatal("the old section was kept")
	}
	again, err := venuedoc.Splice(s, venuedoc.Section())
	if err != nil || again != s {
		t.Fatalf("a second splice changed the text (err %v)", err)
	}
	if err := venuedoc.Check(s); err != nil {
		t.Fatalf("Check of a fresh splice: %v", err)
	}
}

// Every kind of drift between the README and the profiles is caught, and the
// error says where and how to fix it.
func TestCheckCatchesDrift(t *testing.T) {
	s := fresh(t)
	kraken := venuedoc.RestingOrders(venue.KrakenSpot())
	cases := map[string]string{
		"a fact edited by hand":      strings.Replace(s, "on by default", "off by default", 1),
		"a row deleted":              strings.Replace(s, kraken.CancelOnDisconnect, "", 1),
		"a venue note dropped":       strings.Replace(s, "- **Bybit**", "- **Bybyt**", 1),
		"a line added in the table":  strings.Replace(s, venuedoc.End, "| extra |\n"+venuedoc.End, 1),
		"the stale section restored": stub,
	}
	for name, readme := range cases {
		t.Run(name, func(t *testing.T) {
			if readme == s {
				t.Fatal("the planted drift changed nothing")
			}
			err := venuedoc.Check(readme)
			if err == nil {
				t.Fatal("drift not caught")
			}
			if !strings.Contains(err.Error(), venuedoc.Command) {
				t.Errorf("error does not say how to fix it: %v", err)
			}
		})
	}
	err := venuedoc.Check(strings.Replace(s, "on by default", "off by default", 1))
	if !strings.Contains(err.Error(), "line ") || !strings.Contains(err.Error(), "off by default") {
		t.Errorf("error does not name the line: %v", err)
	}
}

func TestMarkersMustBeWellFormed(t *testing.T) {
	for name, readme := range map[string]string{
		"none":      "# title\n",
		"no end":    venuedoc.Begin + "\n",
		"reversed":  venuedoc.End + "\n" + venuedoc.Begin + "\n",
		"twice":     stub + stub,
		"end twice": venuedoc.Begin + "\n" + venuedoc.End + "\n" + venuedoc.End + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := venuedoc.Splice(readme, "x"); !errors.Is(err, venuedoc.ErrMarkers) {
				t.Fatalf("Splice: %v, want ErrMarkers", err)
			}
			if err := venuedoc.Check(readme); !errors.Is(err, venuedoc.ErrMarkers) {
				t.Fatalf("Check: %v, want ErrMarkers", err)
			}
		})
	}
}

// The section has one row per shipped profile and one line per venue without
// a profile, each with an https source.
func TestSectionCoversEveryVenue(t *testing.T) {
	sec := venuedoc.Section()
	for _, p := range venue.Shipped() {
		if !strings.Contains(sec, "| `"+p.Name+"` |") {
			t.Errorf("no row for %s", p.Name)
		}
	}
	for _, n := range venuedoc.Unprofiled {
		if !strings.HasPrefix(n.URL, "https://") || n.Says == "" {
			t.Errorf("%s: want what the venue says and an https source", n.Venue)
		}
		if !strings.Contains(sec, "- **"+n.Venue+"**: ") || !strings.Contains(sec, "("+n.URL+")") {
			t.Errorf("no line for %s", n.Venue)
		}
		for _, p := range venue.Shipped() {
			if strings.EqualFold(p.Name, n.Venue) {
				t.Errorf("%s is shipped as a profile: it belongs in the table", n.Venue)
			}
		}
	}
}
