package orderflow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// BrokerPolicy is what the simulated broker does for the library, or does
// not: one cell of the chaos matrix.
type BrokerPolicy struct {
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
func (p BrokerPolicy) String() string {
	return fmt.Sprintf("dedup=%s fence=%s tokens=%s", p.Dedup, p.Fence, p.Tokens)
}

// PolicyMatrix is the default set of cells: no help from the broker at all, each
// kind of help alone, and the forgiving broker of old.
func PolicyMatrix() []BrokerPolicy {
	return []BrokerPolicy{
		{Dedup: "none", Fence: "none", Tokens: "off"},
		{Dedup: "none", Fence: "enforced", Tokens: "off"},
		{Dedup: "none", Fence: "none", Tokens: "checked"},
		{Dedup: "open-only", Fence: "none", Tokens: "off"},
		{Dedup: "across", Fence: "none", Tokens: "off"},
	}
}

// PolicyMatrixNames lists the default cells for a flag's help.
func PolicyMatrixNames() string {
	var out []string
	for _, p := range PolicyMatrix() {
		out = append(out, p.String())
	}
	return strings.Join(out, "; ")
}

// ParsePolicies reads "matrix" or policies separated by ';', each a
// comma-separated list of key=value (missing keys: dedup=across,
// fence=none, tokens=off).
func ParsePolicies(s string) ([]BrokerPolicy, error) {
	if strings.TrimSpace(s) == "matrix" {
		return PolicyMatrix(), nil
	}
	var out []BrokerPolicy
	for _, one := range strings.Split(s, ";") {
		one = strings.TrimSpace(one)
		if one == "" {
			continue
		}
		p := BrokerPolicy{Dedup: "across", Fence: "none", Tokens: "off"}
		for _, kv := range strings.FieldsFunc(one, func(r rune) bool { return r == ',' || r == ' ' }) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("orderflow: policy %q: %q is not key=value", one, kv)
			}
			switch k {
			case "dedup":
				if v != "across" && v != "open-only" && v != "none" {
					return nil, fmt.Errorf("orderflow: policy %q: dedup=%s: want across, open-only or none", one, v)
				}
				p.Dedup = v
			case "fence":
				if v != "none" && v != "enforced" {
					return nil, fmt.Errorf("orderflow: policy %q: fence=%s: want none or enforced", one, v)
				}
				p.Fence = v
			case "tokens":
				if v != "off" && v != "checked" {
					return nil, fmt.Errorf("orderflow: policy %q: tokens=%s: want off or checked", one, v)
				}
				p.Tokens = v
			default:
				return nil, fmt.Errorf("orderflow: policy %q: unknown key %q (dedup, fence, tokens)", one, k)
			}
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("orderflow: no policy in %q", s)
	}
	return out, nil
}

// ErrPolicyNotOffered: the simulated broker cannot be configured with the
// policy.
var ErrPolicyNotOffered = errors.New("orderflow: broker policy not offered by the simulated broker")

// Apply sets the policy on a simulated broker's configuration (an empty
// field keeps the broker's default). The names are the simulated broker's own
// (simbroker.ParseDedupPolicy, ParseFencePolicy, ParseTokenPolicy).
func (p BrokerPolicy) Apply(c *simbroker.Config) error {
	orDefault := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	dedup, err := simbroker.ParseDedupPolicy(orDefault(p.Dedup, "across"))
	if err != nil {
		return fmt.Errorf("%w: policy %s: %w", ErrInvalidConfig, p, err)
	}
	fence, err := simbroker.ParseFencePolicy(orDefault(p.Fence, "none"))
	if err != nil {
		return fmt.Errorf("%w: policy %s: %w", ErrInvalidConfig, p, err)
	}
	tokens, err := simbroker.ParseTokenPolicy(orDefault(p.Tokens, "off"))
	if err != nil {
		return fmt.Errorf("%w: policy %s: %w", ErrInvalidConfig, p, err)
	}
	c.Dedup, c.Fence, c.Tokens = dedup, fence, tokens
	return nil
}
