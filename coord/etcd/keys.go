package etcdcoord

import (
	"fmt"
	"strings"
)

// keyLayout is the key layout under one prefix (one broker account). See the
// package documentation.
type keyLayout struct {
	// Prefix ends with "/".
	Prefix string
}

// newKeyLayout returns the layout under prefix, adding a trailing "/" if missing.
func newKeyLayout(prefix string) (keyLayout, error) {
	if strings.TrimSpace(prefix) == "" {
		return keyLayout{}, fmt.Errorf("%w: Prefix is empty", ErrInvalidConfig)
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return keyLayout{Prefix: prefix}, nil
}

// Observations is the prefix of every observation.
func (k keyLayout) Observations() string { return k.Prefix + "observations/" }

// Observation is the key of one observer's opinion of one endpoint.
func (k keyLayout) Observation(observer, endpoint string) string {
	return k.Observations() + observer + "/" + endpoint
}

// Election is the concurrency.Election prefix.
func (k keyLayout) Election() string { return k.Prefix + "election" }

// Assignment is the key of the account's Assignment.
func (k keyLayout) Assignment() string { return k.Prefix + "assignment" }

// Followers is the prefix of every follower's acknowledgement.
func (k keyLayout) Followers() string { return k.Prefix + "followers/" }

// Follower is the key of one follower's acknowledgement.
func (k keyLayout) Follower(name string) string { return k.Followers() + name }

// checkName refuses names that would break the key layout.
func checkName(field, name string) error {
	if strings.TrimSpace(name) == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalidConfig, field)
	}
	if strings.ContainsAny(name, "/ \t\n") {
		return fmt.Errorf("%w: %s %q contains '/' or white space", ErrInvalidConfig, field, name)
	}
	return nil
}

// electionKey is the election key of the candidate whose session holds lease
// (concurrency.Election's layout: <election prefix>/<lease in hex>).
func (k keyLayout) electionKey(lease int64) string {
	return fmt.Sprintf("%s/%x", k.Election(), lease)
}
