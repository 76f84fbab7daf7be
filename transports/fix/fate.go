package fix

import (
	"strings"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/safetext"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// FateOf classifies an answer to an OrderStatusRequest by OrdStatus (39):
// New, PartiallyFilled, PendingNew, PendingReplace, PendingCancel, Replaced,
// Accepted for bidding, Suspended, Calculated → FateResting; Filled →
// FateFilled; Canceled, DoneForDay, Expired → FateCanceled; Rejected →
// FateRejected, except OrdRejReason=5 (unknown order) → FateNotReceived. A
// BusinessMessageReject is classified by BusinessRejectReason (380): 1
// (unknown ID: the broker does not know the ClOrdID) → FateNotReceived; any
// other reason (3 unsupported message type, 4 application not available, 0
// other, ...) says nothing about the order → FateUndetermined. A session
// Reject (35=3) is FateUndetermined. Anything else is FateUndetermined.
func FateOf(msg *quickfix.Message) (pathdialer.Fate, string) {
	// The counterparty's words reach a Settlement's Detail: escaped and cut.
	field := func(fm *quickfix.FieldMap, tag quickfix.Tag) string {
		v, _ := fm.GetString(tag)
		return safetext.Bound(v)
	}
	mt := field(&msg.Header.FieldMap, tagMsgType)
	text := field(&msg.Body.FieldMap, tagText)
	switch mt {
	case msgTypeBusinessReject:
		r := field(&msg.Body.FieldMap, tagBusinessRejectRsn)
		d := strings.TrimSpace("business reject 380=" + r + ": " + text)
		if r == "1" {
			return pathdialer.FateNotReceived, d + " (unknown ID)"
		}
		return pathdialer.FateUndetermined, d + " (no verdict on the order)"
	case msgTypeReject:
		r := field(&msg.Body.FieldMap, tagSessionRejectRsn)
		return pathdialer.FateUndetermined, strings.TrimSpace("session reject 373=" + r + ": " + text + " (no verdict on the order)")
	}
	if mt != msgTypeExecutionReport {
		return pathdialer.FateUndetermined, "unexpected answer MsgType " + mt
	}
	st, err := msg.Body.GetString(tagOrdStatus)
	if err != nil {
		return pathdialer.FateUndetermined, "ExecutionReport without OrdStatus"
	}
	detail := "OrdStatus=" + safetext.Bound(st)
	if id := field(&msg.Body.FieldMap, tagOrderID); id != "" {
		detail += " OrderID=" + id
	}
	switch st {
	case "0", "1", "A", "E", "6", "5", "D", "9", "B":
		return pathdialer.FateResting, detail
	case "2":
		return pathdialer.FateFilled, detail
	case "4", "3", "C":
		return pathdialer.FateCanceled, detail
	case "8":
		if r, _ := msg.Body.GetString(tagOrdRejReason); r == "5" {
			return pathdialer.FateNotReceived, detail + " OrdRejReason=5 (unknown order)"
		}
		return pathdialer.FateRejected, detail
	}
	return pathdialer.FateUndetermined, detail
}
