//go:build dstfix

package fix

import "github.com/brokerpath/brokerpath/pathdialer"

// SimOnAcquire, in the simulation's build only (-tags dstfix), has f see
// each order's ticket as the Path grants it (its endpoint and token), before
// the order is handed to quickfix. Set it before the first SendOrder.
func (in *Initiator) SimOnAcquire(f func(*pathdialer.Ticket)) { in.onAcquire = f }
