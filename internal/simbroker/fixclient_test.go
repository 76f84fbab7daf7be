package simbroker

import (
	"bufio"
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/tag"
)

// rawFIX is a minimal FIX 4.4 initiator for tests: it lets one test hold
// two connections with the same CompIDs (which two quickfix initiators in
// one process cannot) and control sequence numbers and PossDup exactly.
type rawFIX struct {
	t      *testing.T
	conn   net.Conn
	r      *bufio.Reader
	sender string
	target string
	seq    *int // next outbound MsgSeqNum, shared across a client's connections
	in     chan *quickfix.Message
	stop   chan struct{}
	done   chan struct{}
}

func dialFIX(t *testing.T, b *Broker, region string, seq *int) *rawFIX {
	t.Helper()
	conn, err := net.DialTimeout("tcp", b.Region(region).FIXAddr(), 2*time.Second)
	if err != nil {
		t.Fatalf("dial FIX %s: %v", region, err)
	}
	c := &rawFIX{
		t: t, conn: conn, r: bufio.NewReader(conn),
		sender: b.cfg.ClientCompID, target: b.cfg.BrokerCompID, seq: seq,
		in: make(chan *quickfix.Message, 64), stop: make(chan struct{}), done: make(chan struct{}),
	}
	go c.readLoop()
	t.Cleanup(c.close)
	return c
}

func (c *rawFIX) close() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
	}
	_ = c.conn.Close()
	<-c.done
}

func (c *rawFIX) readLoop() {
	defer close(c.done)
	defer close(c.in)
	for {
		var raw bytes.Buffer
		for {
			f, err := c.r.ReadString('\x01')
			if err != nil {
				return
			}
			raw.WriteString(f)
			if strings.HasPrefix(f, "10=") {
				break
			}
		}
		m := quickfix.NewMessage()
		if err := quickfix.ParseMessage(m, &raw); err != nil {
			return
		}
		select {
		case c.in <- m:
		case <-c.stop:
			return
		}
	}
}

// sendRaw sends one message with the next sequence number.
func (c *rawFIX) sendRaw(msgType string, body func(*quickfix.Body), possDup bool) {
	m := quickfix.NewMessage()
	m.Header.SetString(tag.BeginString, quickfix.BeginStringFIX44)
	m.Header.SetString(tag.MsgType, msgType)
	m.Header.SetString(tag.SenderCompID, c.sender)
	m.Header.SetString(tag.TargetCompID, c.target)
	m.Header.SetInt(tag.MsgSeqNum, *c.seq)
	now := time.Now().UTC()
	m.Header.SetField(tag.SendingTime, quickfix.FIXUTCTimestamp{Time: now})
	if possDup {
		m.Header.SetBool(tag.PossDupFlag, true)
		m.Header.SetField(tag.OrigSendingTime, quickfix.FIXUTCTimestamp{Time: now.Add(-time.Second)})
	}
	if body != nil {
		body(&m.Body)
	}
	*c.seq++
	if _, err := c.conn.Write([]byte(m.String())); err != nil {
		c.t.Logf("FIX write: %v", err)
	}
}

// next returns the next non-heartbeat message, failing after 3s.
func (c *rawFIX) next() *quickfix.Message {
	c.t.Helper()
	timeout := time.After(3 * time.Second)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatal("FIX connection closed while waiting for a message")
			}
			if mt, _ := m.MsgType(); mt == "0" || mt == "1" { // heartbeats, test requests
				continue
			}
			return m
		case <-timeout:
			c.t.Fatal("timed out waiting for a FIX message")
		}
	}
}

// expectClosed waits until the broker side closes the connection.
func (c *rawFIX) expectClosed() {
	c.t.Helper()
	timeout := time.After(3 * time.Second)
	for {
		select {
		case _, ok := <-c.in:
			if !ok {
				return
			}
		case <-timeout:
			c.t.Fatal("FIX connection still open")
		}
	}
}

func (c *rawFIX) logon(reset bool) *quickfix.Message {
	c.t.Helper()
	c.sendRaw("A", func(b *quickfix.Body) {
		b.SetInt(tag.EncryptMethod, 0)
		b.SetInt(tag.HeartBtInt, 5)
		if reset {
			b.SetBool(tag.ResetSeqNumFlag, true)
		}
	}, false)
	m := c.next()
	if mt, _ := m.MsgType(); mt != "A" {
		c.t.Fatalf("logon answered with %s: %s", mt, m)
	}
	return m
}

func (c *rawFIX) logout() {
	c.t.Helper()
	c.sendRaw("5", nil, false)
	m := c.next()
	if mt, _ := m.MsgType(); mt != "5" {
		c.t.Fatalf("logout answered with %s", mt)
	}
	c.expectClosed()
}

func (c *rawFIX) newOrder(clOrdID, ordType, price string, possDup bool) {
	c.sendRaw("D", func(b *quickfix.Body) {
		b.SetString(tag.ClOrdID, clOrdID)
		b.SetString(tag.Symbol, "EURUSD")
		b.SetString(tag.Side, "1")
		b.SetField(tag.TransactTime, quickfix.FIXUTCTimestamp{Time: time.Now().UTC()})
		b.SetString(tag.OrderQty, "100")
		b.SetString(tag.OrdType, ordType)
		if price != "" {
			b.SetString(tag.Price, price)
		}
	}, possDup)
}

func str(t *testing.T, m *quickfix.Message, tg quickfix.Tag) string {
	t.Helper()
	v, err := m.Body.GetString(tg)
	if err != nil {
		if v, err = m.Header.GetString(tg); err != nil {
			return ""
		}
	}
	return v
}

func msgSeq(t *testing.T, m *quickfix.Message) int {
	t.Helper()
	n, err := m.Header.GetInt(tag.MsgSeqNum)
	if err != nil {
		t.Fatalf("no MsgSeqNum: %v", err)
	}
	return n
}
