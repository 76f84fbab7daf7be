package fix

import "github.com/quickfixgo/quickfix"

// FIX tags and message types the package reads or writes.
const (
	tagClOrdID             quickfix.Tag = 11
	tagMsgType             quickfix.Tag = 35
	tagOrdStatus           quickfix.Tag = 39
	tagPossDupFlag         quickfix.Tag = 43
	tagSide                quickfix.Tag = 54
	tagSymbol              quickfix.Tag = 55
	tagExecTransType       quickfix.Tag = 20
	tagOrderID             quickfix.Tag = 37
	tagResetSeqNumFlag     quickfix.Tag = 141
	tagExecType            quickfix.Tag = 150
	tagOrdRejReason        quickfix.Tag = 103
	tagText                quickfix.Tag = 58
	tagBusinessRejectRefID quickfix.Tag = 379
	tagCxlRejReason        quickfix.Tag = 102
	tagAccount             quickfix.Tag = 1
	tagSenderCompID        quickfix.Tag = 49
	tagTargetCompID        quickfix.Tag = 56
	tagMsgSeqNum           quickfix.Tag = 34
	tagRefSeqNum           quickfix.Tag = 45
	tagRefMsgType          quickfix.Tag = 372
	tagBusinessRejectRsn   quickfix.Tag = 380
	tagSessionRejectRsn    quickfix.Tag = 373
	tagMassStatusReqID     quickfix.Tag = 584
	tagMassStatusReqType   quickfix.Tag = 585
	tagLastRptRequested    quickfix.Tag = 912

	msgTypeLogon              = "A"
	msgTypeNewOrderSingle     = "D"
	msgTypeCancelRequest      = "F"
	msgTypeCancelReplace      = "G"
	msgTypeNewOrderMultileg   = "AB"
	msgTypeMultilegReplace    = "AC"
	msgTypeExecutionReport    = "8"
	msgTypeOrderCancelReject  = "9"
	msgTypeBusinessReject     = "j"
	msgTypeOrderStatusRequest = "H"
	msgTypeMassStatusRequest  = "AF"
	msgTypeLogout             = "5"
	msgTypeReject             = "3"
)

// IsOrder reports whether a FIX MsgType is an order the package gates, never
// resends and reconciles: NewOrderSingle (D), OrderCancelRequest (F),
// OrderCancelReplaceRequest (G), NewOrderMultileg (AB) and
// MultilegOrderCancelReplace (AC).
func IsOrder(msgType string) bool {
	switch msgType {
	case msgTypeNewOrderSingle, msgTypeCancelRequest, msgTypeCancelReplace, msgTypeNewOrderMultileg, msgTypeMultilegReplace:
		return true
	}
	return false
}
