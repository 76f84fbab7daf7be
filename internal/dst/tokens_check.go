package dst

import (
	"math/rand/v2"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// InvTokenPath: a fencing token names one path.
const InvTokenPath = "token-names-one-path"

// drawLibToken decides, from a source of its own (every other field of the
// seed is unchanged), whether a standalone seed whose broker checks fencing
// tokens has its orders carry the library's own token (the REST transport's
// TokenHeader: the ticket's Token) instead of the simulation's (the active
// generation + 1, read before the order): half of them.
func drawLibToken(s *Scenario) {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x70c3e570c3e570c3))
	s.LibToken = r.IntN(2) == 0 && s.Tokens == simbroker.TokensChecked && !s.Coordinated
}

// libToken reports whether the orders carry the library's fencing token.
func (w *world) libToken() bool {
	return w.s.Tokens == simbroker.TokensChecked && !w.s.Coordinated && (w.o.LibraryToken || w.s.LibToken)
}

// checkTokens judges token-names-one-path where the orders carry the
// library's own token (w.mu is held): every switch moves flow to another
// endpoint under a new token, so the orders that reached the broker
// carrying one token all came through one region. Judged from the broker's
// audit alone (the token each order carried and the region it came
// through), booked or refused: a switch that does not advance the token
// lets the old path's late orders pass a broker that checks tokens, as the
// new path's own. The broker's half of the promise, that it refuses every
// stale token, is stale-token-rejected (check.go).
func (w *world) checkTokens(res *Result, audit simbroker.AuditLog, viol func(inv, format string, a ...any)) {
	if !w.libToken() {
		return
	}
	var mine []simbroker.Record
	for _, r := range audit {
		if r.Kind == simbroker.KindOrder && w.orders[r.ClientOrderID] != nil {
			mine = append(mine, r)
		}
	}
	res.Stats.LibTokens = judgeTokenPaths(w.start, mine, viol)
}

// judgeTokenPaths is checkTokens's judgement over the broker's records of
// this process's orders, in the broker's order; it returns how many carried
// a token.
func judgeTokenPaths(start time.Time, recs []simbroker.Record, viol func(inv, format string, a ...any)) int {
	first := map[uint64]simbroker.Record{}
	reported := map[uint64]bool{}
	n := 0
	for _, r := range recs {
		if r.Outcome == simbroker.OutcomeMissingToken {
			continue // carried none (the broker refused it for that)
		}
		n++
		f, ok := first[r.Token]
		if !ok {
			first[r.Token] = r
			continue
		}
		if f.Region != r.Region && !reported[r.Token] {
			reported[r.Token] = true
			viol(InvTokenPath, "token %d came through %s (%s at %v, %s) and through %s (%s at %v, %s): a switch did not advance the token",
				r.Token, f.Region, f.ClientOrderID, f.Time.Sub(start), f.Outcome, r.Region, r.ClientOrderID, r.Time.Sub(start), r.Outcome)
		}
	}
	return n
}
