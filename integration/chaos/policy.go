package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// Policy is one cell of the matrix: what the simulated broker does for the
// library (or does not).
type Policy struct {
	// Dedup: how the book deduplicates client order IDs — "across" (across
	// regions, every order), "open-only" (only while the first is open),
	// "none".
	Dedup string
	// Fence: "none" (the broker never fences) or "enforced" (a fenced
	// region rejects the account's orders: a kill switch).
	Fence string
	// Tokens: "off" or "checked" (a region rejects an order whose fencing
	// token is lower than the highest it has seen).
	Tokens string
}

// String renders "dedup=none fence=enforced tokens=off".
func (p Policy) String() string {
	return fmt.Sprintf("dedup=%s fence=%s tokens=%s", p.Dedup, p.Fence, p.Tokens)
}

// Matrix is the default set of cells: no help from the broker at all, each
// kind of help alone, and the forgiving broker of old.
func Matrix() []Policy {
	return []Policy{
		{Dedup: "none", Fence: "none", Tokens: "off"},
		{Dedup: "none", Fence: "enforced", Tokens: "off"},
		{Dedup: "none", Fence: "none", Tokens: "checked"},
		{Dedup: "open-only", Fence: "none", Tokens: "off"},
		{Dedup: "across", Fence: "none", Tokens: "off"},
	}
}

// MatrixNames lists the default cells for a flag's help.
func MatrixNames() string {
	var out []string
	for _, p := range Matrix() {
		out = append(out, p.String())
	}
	return strings.Join(out, "; ")
}

// ParsePolicies reads "matrix" or policies separated by ';', each a
// comma-separated list of key=value (missing keys: dedup=across,
// fence=none, tokens=off).
func ParsePolicies(s string) ([]Policy, error) {
	if strings.TrimSpace(s) == "matrix" {
		return Matrix(), nil
	}
	var out []Policy
	for _, one := range strings.Split(s, ";") {
		one = strings.TrimSpace(one)
		if one == "" {
			continue
		}
		p := Policy{Dedup: "across", Fence: "none", Tokens: "off"}
		for _, kv := range strings.FieldsFunc(one, func(r rune) bool { return r == ',' || r == ' ' }) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("chaos: policy %q: %q is not key=value", one, kv)
			}
			switch k {
			case "dedup":
				if v != "across" && v != "open-only" && v != "none" {
					return nil, fmt.Errorf("chaos: policy %q: dedup=%s: want across, open-only or none", one, v)
				}
				p.Dedup = v
			case "fence":
				if v != "none" && v != "enforced" {
					return nil, fmt.Errorf("chaos: policy %q: fence=%s: want none or enforced", one, v)
				}
				p.Fence = v
			case "tokens":
				if v != "off" && v != "checked" {
					return nil, fmt.Errorf("chaos: policy %q: tokens=%s: want off or checked", one, v)
				}
				p.Tokens = v
			default:
				return nil, fmt.Errorf("chaos: policy %q: unknown key %q (dedup, fence, tokens)", one, k)
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("chaos: no policy in %q", s)
	}
	return out, nil
}

// Apply sets the policy on a simulated broker's configuration.
func (p Policy) Apply(c *simbroker.Config) error {
	if p.Dedup != "across" || p.Fence != "none" || p.Tokens != "off" {
		return fmt.Errorf("chaos: policy %s: this simulated broker has no strict policies yet", p)
	}
	return nil
}

// Row is one policy's line of the matrix.
type Row struct {
	Policy                       Policy
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
