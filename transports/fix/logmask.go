package fix

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/quickfixgo/quickfix"
)

// maskedLogs wraps a quickfix.LogFactory so that every message and event
// it logs has the values of Username (553), Password (554), NewPassword (925)
// and RawData (96) replaced by "***". NewInitiator wraps the log factory it is given with it,
// so credentials set in the application's ToAdmin never reach quickfix's logs.
func maskedLogs(inner quickfix.LogFactory) quickfix.LogFactory {
	if m, ok := inner.(maskedLogFactory); ok {
		return m
	}
	return maskedLogFactory{inner: inner}
}

type maskedLogFactory struct {
	inner quickfix.LogFactory
	// incoming, when set, sees every incoming message of a session before
	// quickfix processes it (the Initiator reads Logout texts there: quickfix
	// does not pass a Logout that answers a Logon to the application).
	incoming func(sid quickfix.SessionID, msg []byte)
}

func (f maskedLogFactory) Create() (quickfix.Log, error) {
	l, err := f.inner.Create()
	if err != nil {
		return nil, err
	}
	return maskedLog{l, nil}, nil
}

func (f maskedLogFactory) CreateSessionLog(sid quickfix.SessionID) (quickfix.Log, error) {
	l, err := f.inner.CreateSessionLog(sid)
	if err != nil {
		return nil, err
	}
	if f.incoming != nil {
		return maskedLog{l, func(b []byte) { f.incoming(sid, b) }}, nil
	}
	return maskedLog{l, nil}, nil
}

type maskedLog struct {
	inner    quickfix.Log
	incoming func([]byte)
}

func (l maskedLog) OnIncoming(b []byte) {
	if l.incoming != nil {
		l.incoming(b)
	}
	l.inner.OnIncoming(maskFIX(b))
}
func (l maskedLog) OnOutgoing(b []byte) { l.inner.OnOutgoing(maskFIX(b)) }
func (l maskedLog) OnEvent(s string)    { l.inner.OnEvent(string(maskFIX([]byte(s)))) }
func (l maskedLog) OnEventf(format string, a ...any) {
	l.inner.OnEvent(string(maskFIX(fmt.Appendf(nil, format, a...))))
}

const soh = '\x01'

var secretMarks = [][]byte{[]byte("\x01553="), []byte("\x01554="), []byte("\x01925="), []byte("\x0196=")}

// maskFIX returns msg with the values of tags 553, 554, 925 and 96 replaced by
// "***" (msg itself is never modified). RawData's length comes from
// RawDataLength (95) when it precedes it, since RawData may contain SOH.
func maskFIX(msg []byte) []byte {
	found := false
	for _, m := range secretMarks {
		if bytes.Contains(msg, m) {
			found = true
			break
		}
	}
	if !found {
		return msg
	}
	out := make([]byte, 0, len(msg))
	rawLen := -1
	for i := 0; i < len(msg); {
		rest := msg[i:]
		eq := bytes.IndexByte(rest, '=')
		sep := bytes.IndexByte(rest, soh)
		if eq < 0 || (sep >= 0 && sep < eq) { // no field here: copy through the SOH
			if sep < 0 {
				out = append(out, rest...)
				break
			}
			out = append(out, rest[:sep+1]...)
			i += sep + 1
			continue
		}
		tag := string(rest[:eq])
		vStart := eq + 1
		vEnd := len(rest)
		if sep >= 0 {
			vEnd = sep
		}
		if tag == "96" && rawLen >= 0 && vStart+rawLen <= len(rest) {
			vEnd = vStart + rawLen
		}
		out = append(out, rest[:vStart]...)
		switch tag {
		case "553", "554", "925", "96":
			out = append(out, "***"...)
		default:
			out = append(out, rest[vStart:vEnd]...)
		}
		if tag == "95" {
			if n, err := strconv.Atoi(string(rest[vStart:vEnd])); err == nil {
				rawLen = n
			}
		}
		if vEnd < len(rest) {
			out = append(out, soh)
		}
		i += vEnd + 1
	}
	return out
}
