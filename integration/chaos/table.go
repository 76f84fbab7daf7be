package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/brokerpath/brokerpath/internal/orderflow"
)

// Row is one policy's line of the matrix.
type Row struct {
	Policy                       orderflow.BrokerPolicy
	Orders, Faults               int
	Duplicates, Allowed          int
	Losses, TwoLive              int
	LateReported, LateUnreported int
	Halts, Repeats, Violations   int
	Result                       string
}

// WriteTable prints the matrix.
func WriteTable(w io.Writer, rows []Row) {
	fmt.Fprintf(w, "| %-9s | %-8s | %-7s | %6s | %6s | %-20s | %6s | %13s | %-23s | %5s | %7s | %s\n",
		"dedup", "fence", "tokens", "orders", "faults", "duplicates (allowed)", "losses", "two live path", "late landings rep/unrep", "halts", "repeats", "result")
	fmt.Fprintf(w, "|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s|%s\n", dash(11), dash(10), dash(9), dash(8), dash(8), dash(21), dash(8), dash(15), dash(25), dash(7), dash(9), dash(12))
	for _, r := range rows {
		fmt.Fprintf(w, "| %-9s | %-8s | %-7s | %6d | %6d | %-20s | %6d | %13d | %-23s | %5d | %7d | %s (%d violations)\n",
			r.Policy.Dedup, r.Policy.Fence, r.Policy.Tokens, r.Orders, r.Faults,
			fmt.Sprintf("%d (%d)", r.Duplicates, r.Allowed), r.Losses, r.TwoLive,
			fmt.Sprintf("%d / %d", r.LateReported, r.LateUnreported), r.Halts, r.Repeats, r.Result, r.Violations)
	}
}

func dash(n int) string { return strings.Repeat("-", n) }
