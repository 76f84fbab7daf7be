package fix

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/safetext"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// ErrNoOpenOrderList: the venue's open orders could not be listed over FIX
// (no session logged on at the endpoint, the request refused, or no complete
// answer before the context ended).
var ErrNoOpenOrderList = errors.New("fix: open orders not listed")

// OpenOrders lists the venue's orders over FIX, for
// pathdialer.OpenOrderCheck.Venue: every session logged on at q.Endpoint is
// sent an OrderMassStatusRequest (MassStatusReqType 7, all orders), and every
// ExecutionReport of its answer is returned, its OrdStatus classified as
// FateOf does (resting → VenueOpen, filled → VenueFilled, canceled, expired,
// done for day → VenueCancelled, unknown order → VenueNotFound). Only a
// complete answer (LastRptRequested=Y) is returned: a partial list would make
// open orders look gone, so the function fails instead (ErrNoOpenOrderList),
// and the Path retries within the venue's lookup budget. A counterparty that
// does not support OrderMassStatusRequest answers with a reject: use the
// venue's REST open-orders list then.
func (in *Initiator) OpenOrders(ctx context.Context, q pathdialer.OpenOrderQuery) ([]pathdialer.VenueOrder, error) {
	if in == nil {
		return nil, ErrNoInitiator
	}
	var sessions []quickfix.SessionID
	for _, sid := range in.SessionIDs() {
		if ep, ok := in.LoggedOn(sid); ok && ep == q.Endpoint.Name {
			sessions = append(sessions, sid)
		}
	}
	if len(sessions) == 0 {
		return nil, fmt.Errorf("%w: no session logged on at %q yet", ErrNoOpenOrderList, q.Endpoint.Name)
	}
	slices.SortFunc(sessions, func(a, b quickfix.SessionID) int { return strings.Compare(a.String(), b.String()) })
	var out []pathdialer.VenueOrder
	for _, sid := range sessions {
		got, err := in.listOrders(ctx, sid)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// listOrders asks one session for a mass status and collects the answer.
func (in *Initiator) listOrders(ctx context.Context, sid quickfix.SessionID) ([]pathdialer.VenueOrder, error) {
	reqID := fmt.Sprintf("bp-oo-%d", in.massSeq.Add(1))
	ch := make(chan *quickfix.Message, 4096)
	in.mu.Lock()
	in.mass[reqID] = ch
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		delete(in.mass, reqID)
		in.mu.Unlock()
	}()
	m := quickfix.NewMessage()
	m.Header.SetString(tagMsgType, msgTypeMassStatusRequest)
	m.Body.SetString(tagMassStatusReqID, reqID)
	m.Body.SetString(tagMassStatusReqType, "7")
	if err := quickfix.SendToTarget(m, sid); err != nil {
		return nil, fmt.Errorf("%w: OrderMassStatusRequest on %v: %w", ErrNoOpenOrderList, sid, err)
	}
	var out []pathdialer.VenueOrder
	for {
		select {
		case msg := <-ch:
			mt, _ := msg.Header.GetString(tagMsgType)
			if mt != msgTypeExecutionReport {
				text, _ := msg.Body.GetString(tagText)
				return nil, fmt.Errorf("%w: OrderMassStatusRequest refused on %v: %s: %s", ErrNoOpenOrderList, sid, describeReject(msg), safetext.Bound(text))
			}
			if id, _ := msg.Body.GetString(tagClOrdID); id != "" {
				sym, _ := msg.Body.GetString(tagSymbol)
				o := pathdialer.VenueOrder{OrderID: id, Symbol: sym}
				fate, _ := FateOf(msg)
				switch fate {
				case pathdialer.FateResting:
					o.State = pathdialer.VenueOpen
				case pathdialer.FateFilled:
					o.State = pathdialer.VenueFilled
				case pathdialer.FateCanceled:
					o.State = pathdialer.VenueCancelled
				case pathdialer.FateNotReceived, pathdialer.FateRejected:
					o.State = pathdialer.VenueNotFound
				default:
					o = pathdialer.VenueOrder{}
				}
				if o.OrderID != "" {
					out = append(out, o)
				}
			}
			if last, err := msg.Body.GetBool(tagLastRptRequested); err == nil && last {
				return out, nil
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: no complete OrderMassStatus answer on %v: %w", ErrNoOpenOrderList, sid, ctx.Err())
		}
	}
}
