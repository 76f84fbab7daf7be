package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/brokerpath/brokerpath/internal/orderflow"
)

// Row is one policy's line of the matrix.
type Row struct {
	Policy orderflow.BrokerPolicy
	// Orders placed; NotSent never left the process (halted, held past
	// their deadline); Refused answered with a rejection by the broker (a
	// fenced region, a stale or missing token, a partial fault).
	Orders, NotSent, Refused, Faults int
	Duplicates, Allowed              int
	Losses, TwoLive                  int
	LateReported, LateUnreported     int
	Halts, Repeats, Violations       int
	// StaleSent: late copies written after the run with an earlier token
	// (tokens=checked cells, stale.go); StaleRefused: those the broker
	// refused as stale.
	StaleSent, StaleRefused int
	// Resting orders the broker cancelled by itself (cancel-on-disconnect,
	// dead-man) and of those reported to the client; dead-man gaps while a
	// resting order was open (DeadMan: a timer was armed in this run).
	RestingCancelled, RestingReported, DeadManGaps int
	DeadMan                                        bool
	Result                                         string
	// ByRuntime: the Path handled resting orders (its fence mode, dead-man
	// hook and open-order reconcile), not the client's own reconciler.
	ByRuntime bool
}

// WriteTable prints the matrix as a Markdown table.
func WriteTable(w io.Writer, rows []Row) {
	head := []string{"dedup", "fence", "tokens", "orders", "not sent", "refused", "faults", "duplicates (after allowed re-send)",
		"losses", "two live paths", "late landings reported / unreported", "stale tokens refused / written", "halts", "repeats",
		"resting cancelled by the broker / reported", "dead-man gaps", "result"}
	cells := [][]string{head}
	for _, r := range rows {
		cells = append(cells, []string{r.Policy.Dedup, r.Policy.Fence, r.Policy.Tokens,
			fmt.Sprint(r.Orders), fmt.Sprint(r.NotSent), fmt.Sprint(r.Refused), fmt.Sprint(r.Faults),
			fmt.Sprintf("%d (%d)", r.Duplicates, r.Allowed), fmt.Sprint(r.Losses), fmt.Sprint(r.TwoLive),
			fmt.Sprintf("%d / %d", r.LateReported, r.LateUnreported), staleCell(r), fmt.Sprint(r.Halts), fmt.Sprint(r.Repeats),
			fmt.Sprintf("%d / %d%s", r.RestingCancelled, r.RestingReported, byCell(r)), deadManCell(r), result(r)})
	}
	writeTable(w, cells, 3)
}

func result(r Row) string {
	if r.Result == "OK" || r.Result == "FAILED" || r.Result == "interrupted" {
		return fmt.Sprintf("%s (%d violations)", r.Result, r.Violations)
	}
	return r.Result
}

// staleCell is the stale writes refused of those written (tokens=checked
// cells only).
func staleCell(r Row) string {
	if r.Policy.Tokens != "checked" {
		return "-"
	}
	return fmt.Sprintf("%d / %d", r.StaleRefused, r.StaleSent)
}

func deadManCell(r Row) string {
	if !r.DeadMan {
		return "no timer"
	}
	return fmt.Sprint(r.DeadManGaps)
}

// byCell marks a row whose resting orders the runtime handled.
func byCell(r Row) string {
	if r.ByRuntime {
		return " (by the Path)"
	}
	return ""
}

// writeTable prints rows (the first is the header) as a Markdown table with
// aligned columns: the first left columns and the last left-aligned (names,
// the result), the others right-aligned (counts).
func writeTable(w io.Writer, cells [][]string, left int) {
	width := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(row []string) {
		var b strings.Builder
		b.WriteString("|")
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-len([]rune(c)))
			if i < left || i == len(row)-1 {
				b.WriteString(" " + c + pad + " |")
			} else {
				b.WriteString(" " + pad + c + " |")
			}
		}
		fmt.Fprintln(w, b.String())
	}
	line(cells[0])
	sep := make([]string, len(width))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	fmt.Fprintln(w, "|-"+strings.Join(sep, "-|-")+"-|")
	for _, row := range cells[1:] {
		line(row)
	}
}
