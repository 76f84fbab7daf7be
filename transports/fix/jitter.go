//go:build !dstfix

package fix

import (
	"math/rand/v2"
	"time"
)

// jitter draws the logon backoff's full jitter: uniform in [0, n).
func (in *Initiator) jitter(n time.Duration) time.Duration { return rand.N(n) }
