package fix

import (
	"github.com/brokerpath/brokerpath/pathdialer"
)

// SetTicketHook lets a test see (and age) each ticket SendOrder is granted.
func SetTicketHook(in *Initiator, f func(*pathdialer.Ticket)) { in.onAcquire = f }

// MaskFIX exposes the masking for tests.
func MaskFIX(b []byte) []byte { return maskFIX(b) }
