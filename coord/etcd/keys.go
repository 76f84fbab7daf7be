package etcdcoord

import (
	"fmt"
	"strings"
)

// Keys is the key layout under one prefix (one broker account). See the
// package documentation.
type Keys struct {
	// Prefix ends with "/".
	Prefix string
}

// NewKeys returns the layout under prefix, adding a trailing "/" if missing.
func NewKeys(prefix string) (Keys, error) {
	if strings.TrimSpace(prefix) == "" {
		return Keys{}, fmt.Errorf("%w: Prefix is empty", ErrInvalidConfig)
	}
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return Keys{Prefix: prefix}, nil
}

// Observations is the prefix of every observation.
func (k Keys) Observations() string { return k.Prefix + "observations/" }

// Observation is the key of one observer's opinion of one endpoint.
func (k Keys) Observation(observer, endpoint string) string {
	return k.Observations() + observer + "/" + endpoint
}

// Election is the concurrency.Election prefix.
func (k Keys) Election() string { return k.Prefix + "election" }

// Assignment is the key of the account's Assignment.
func (k Keys) Assignment() string { return k.Prefix + "assignment" }

// Followers is the prefix of every follower's acknowledgement.
func (k Keys) Followers() string { return k.Prefix + "followers/" }

// Follower is the key of one follower's acknowledgement.
func (k Keys) Follower(name string) string { return k.Followers() + name }

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
func (k Keys) electionKey(lease int64) string {
	return fmt.Sprintf("%s/%x", k.Election(), lease)
}
