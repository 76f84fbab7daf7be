package dst

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

func sprintf(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// token-names-one-path has teeth: a token that came through two regions
// (a switch that did not advance it) is caught once, whatever the broker
// did with the orders; tokens that change with the path, and the orders
// that carried none, are not.
func TestTokenCheckFindsATokenOnTwoPaths(t *testing.T) {
	t0 := time.Unix(1000, 0)
	rec := func(id, region string, tok uint64, out simbroker.Outcome) simbroker.Record {
		return simbroker.Record{Kind: simbroker.KindOrder, ClientOrderID: id, Region: region, Token: tok, Outcome: out, Time: t0}
	}
	for _, c := range []struct {
		name string
		recs []simbroker.Record
		want string
	}{
		{"advancing", []simbroker.Record{rec("a", "eu", 0, simbroker.OutcomeNew), rec("b", "eu", 0, simbroker.OutcomeNew), rec("c", "us", 1, simbroker.OutcomeNew), rec("d", "eu", 0, simbroker.OutcomeStaleToken), rec("e", "eu", 2, simbroker.OutcomeNew)}, ""},
		{"missing tokens", []simbroker.Record{rec("a", "eu", 0, simbroker.OutcomeNew), rec("b", "us", 0, simbroker.OutcomeMissingToken)}, ""},
		{"not advanced", []simbroker.Record{rec("a", "eu", 3, simbroker.OutcomeNew), rec("b", "us", 3, simbroker.OutcomeNew), rec("c", "us", 3, simbroker.OutcomeNew)}, "token 3 came through eu"},
		{"late landing passes", []simbroker.Record{rec("a", "us", 1, simbroker.OutcomeNew), rec("b", "eu", 1, simbroker.OutcomeCut)}, "through eu (b"},
		{"refused, still two paths", []simbroker.Record{rec("a", "us", 1, simbroker.OutcomeNew), rec("b", "eu", 1, simbroker.OutcomeFenced)}, "token 1"},
	} {
		var got []string
		n := judgeTokenPaths(t0, c.recs, func(inv, format string, a ...any) {
			if inv != InvTokenPath {
				t.Errorf("%s: invariant %s", c.name, inv)
			}
			got = append(got, sprintf(format, a...))
		})
		if n == 0 {
			t.Errorf("%s: no token judged", c.name)
		}
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: %v, want no violation", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: %v, want one %s violation saying %q", c.name, got, InvTokenPath, c.want)
		}
	}
}
