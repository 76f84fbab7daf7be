package simbroker

import (
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/shopspring/decimal"
)

// The FIX 4.4 tags and values the acceptor reads and writes. They are spelled
// out here rather than taken from quickfix's generated field, enum and fix44
// packages, which would add 1.5 MB of generated code to every program that
// starts a simulated broker (the demo included) for the handful used here.
const (
	tagAccount          quickfix.Tag = 1
	tagAvgPx            quickfix.Tag = 6
	tagClOrdID          quickfix.Tag = 11
	tagCumQty           quickfix.Tag = 14
	tagExecID           quickfix.Tag = 17
	tagLastPx           quickfix.Tag = 31
	tagLastQty          quickfix.Tag = 32
	tagOrderID          quickfix.Tag = 37
	tagOrderQty         quickfix.Tag = 38
	tagOrdStatus        quickfix.Tag = 39
	tagOrdType          quickfix.Tag = 40
	tagOrigClOrdID      quickfix.Tag = 41
	tagPossDupFlag      quickfix.Tag = 43
	tagPrice            quickfix.Tag = 44
	tagSide             quickfix.Tag = 54
	tagSymbol           quickfix.Tag = 55
	tagText             quickfix.Tag = 58
	tagTransactTime     quickfix.Tag = 60
	tagOrdRejReason     quickfix.Tag = 103
	tagExecType         quickfix.Tag = 150
	tagLeavesQty        quickfix.Tag = 151
	tagMassStatusReqID  quickfix.Tag = 584
	tagOrdStatusReqID   quickfix.Tag = 790
	tagTotNumReports    quickfix.Tag = 911
	tagLastRptRequested quickfix.Tag = 912
)

// FIX 4.4 values (Side, OrdType, OrdStatus, ExecType, OrdRejReason, MsgType).
const (
	sideBuy  = "1"
	sideSell = "2"

	ordTypeMarket = "1"
	ordTypeLimit  = "2"

	ordStatusNew      = "0"
	ordStatusFilled   = "2"
	ordStatusCanceled = "4"
	ordStatusRejected = "8"

	execTypeNew         = "0"
	execTypeCanceled    = "4"
	execTypeRejected    = "8"
	execTypeTrade       = "F"
	execTypeOrderStatus = "I"

	rejUnknownOrder = "5"
	rejOther        = "99"

	msgTypeLogon              = "A"
	msgTypeLogout             = "5"
	msgTypeExecutionReport    = "8"
	msgTypeNewOrderSingle     = "D"
	msgTypeOrderCancelRequest = "F"
	msgTypeOrderStatusRequest = "H"
	msgTypeOrderMassStatus    = "AF"
)

// execReport is an ExecutionReport (35=8) being built.
type execReport struct{ *quickfix.Message }

// ToMessage implements quickfix.Messagable.
func (r execReport) ToMessage() *quickfix.Message { return r.Message }

// newExecReport starts an ExecutionReport with its required fields.
func newExecReport(orderID, execID, execType, ordStatus, side string, leaves, cum, avg quickfix.FIXDecimal) execReport {
	m := quickfix.NewMessage()
	m.Header.SetString(quickfix.Tag(35), msgTypeExecutionReport)
	m.Body.SetString(tagOrderID, orderID)
	m.Body.SetString(tagExecID, execID)
	m.Body.SetString(tagExecType, execType)
	m.Body.SetString(tagOrdStatus, ordStatus)
	m.Body.SetString(tagSide, side)
	m.Body.SetField(tagLeavesQty, leaves)
	m.Body.SetField(tagCumQty, cum)
	m.Body.SetField(tagAvgPx, avg)
	return execReport{m}
}

func (r execReport) setString(t quickfix.Tag, v string) { r.Body.SetString(t, v) }

func (r execReport) setDecimal(t quickfix.Tag, d decimal.Decimal, scale int32) {
	r.Body.SetField(t, quickfix.FIXDecimal{Decimal: d, Scale: scale})
}

func (r execReport) setTime(t quickfix.Tag, v time.Time) {
	r.Body.SetField(t, quickfix.FIXUTCTimestamp{Time: v, Precision: quickfix.Millis})
}

// fixDecimal is d written with scale digits after the point.
func fixDecimal(d decimal.Decimal, scale int32) quickfix.FIXDecimal {
	return quickfix.FIXDecimal{Decimal: d, Scale: scale}
}

// decimalField reads a decimal field of m's body.
func decimalField(m *quickfix.Message, t quickfix.Tag) (decimal.Decimal, quickfix.MessageRejectError) {
	var v quickfix.FIXDecimal
	if err := m.Body.GetField(t, &v); err != nil {
		return decimal.Zero, err
	}
	return v.Decimal, nil
}
