package fix

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/internal/safetext"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// ProbeOptions configures Probe.
type ProbeOptions struct {
	// SessionID is the probe's session (BeginString, SenderCompID,
	// TargetCompID). Required. Use a session of its own that the broker accepts
	// (a test or drop-copy session): logging on with the trading session's IDs
	// would knock the trading session off.
	SessionID quickfix.SessionID
	// PerEndpoint overrides SessionID for named endpoints (brokers that give a
	// probe session per region).
	PerEndpoint map[string]quickfix.SessionID
	// Service is the endpoint service probed; default "fix".
	Service string
	// TLSConfig, when set, makes the probe speak TLS with the endpoint's host
	// name. InsecureSkipVerify is refused.
	TLSConfig *tls.Config
	// Logon, optional, adds fields to the probe's Logon (Username 553,
	// Password 554, ...). Never logged.
	Logon func(logon *quickfix.Message)
	// Dial opens the probe's TCP connection; nil means a net.Dialer. Probes do
	// not use the Path's tracked dial: they must reach fenced endpoints too.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Probe returns a pathdialer.ProbeFunc that proves an endpoint accepts a FIX
// logon: it connects (TLS when configured), sends a Logon with
// ResetSeqNumFlag=Y and MsgSeqNum 1 for the probe session, and succeeds only
// when a Logon comes back before ctx ends; then it logs out and closes. A TCP
// connect alone proves nothing (a load balancer or a blackholed region accepts
// connections happily); a Logout, Reject or silence is a failure.
func Probe(opts ProbeOptions) (pathdialer.ProbeFunc, error) {
	check := func(sid quickfix.SessionID) error {
		if sid.BeginString == "" || sid.SenderCompID == "" || sid.TargetCompID == "" {
			return fmt.Errorf("%w: probe SessionID needs BeginString, SenderCompID and TargetCompID", ErrInvalidOptions)
		}
		return nil
	}
	if err := check(opts.SessionID); err != nil {
		return nil, err
	}
	for _, sid := range opts.PerEndpoint {
		if err := check(sid); err != nil {
			return nil, err
		}
	}
	if opts.TLSConfig != nil && opts.TLSConfig.InsecureSkipVerify {
		return nil, fmt.Errorf("%w: ProbeOptions.TLSConfig.InsecureSkipVerify is refused", ErrInvalidOptions)
	}
	if opts.Service == "" {
		opts.Service = pathdialer.ServiceFIX
	}
	if opts.Dial == nil {
		d := &net.Dialer{}
		opts.Dial = d.DialContext
	}
	return func(ctx context.Context, ep pathdialer.Endpoint) error {
		_, err := logonExchange(ctx, opts, ep)
		return err
	}, nil
}

// IdentityCheck returns a pathdialer.IdentityFunc that logs on to an endpoint
// as Probe does and reports who answered: Extra["SenderCompID"] and
// Extra["TargetCompID"] of the Logon answer, and Account from its Account tag (1)
// when the broker sends one. Compare with pathdialer.Config.ExpectedIdentity (for
// example Extra {"SenderCompID": "BROKER"}).
func IdentityCheck(opts ProbeOptions) (pathdialer.IdentityFunc, error) {
	if _, err := Probe(opts); err != nil { // same validation
		return nil, err
	}
	if opts.Service == "" {
		opts.Service = pathdialer.ServiceFIX
	}
	if opts.Dial == nil {
		d := &net.Dialer{}
		opts.Dial = d.DialContext
	}
	return func(ctx context.Context, ep pathdialer.Endpoint) (pathdialer.Identity, error) {
		m, err := logonExchange(ctx, opts, ep)
		if err != nil {
			return pathdialer.Identity{}, err
		}
		var id pathdialer.Identity
		sender, _ := m.Header.GetString(tagSenderCompID)
		target, _ := m.Header.GetString(tagTargetCompID)
		id.Extra = map[string]string{"SenderCompID": sender, "TargetCompID": target}
		if acct, err := m.Body.GetString(tagAccount); err == nil {
			id.Account = acct
		}
		return id, nil
	}, nil
}

// logonExchange logs on with a fresh probe session and returns the Logon answer.
func logonExchange(ctx context.Context, opts ProbeOptions, ep pathdialer.Endpoint) (*quickfix.Message, error) {
	{
		sid := opts.SessionID
		if s, ok := opts.PerEndpoint[ep.Name]; ok {
			sid = s
		}
		hp, err := ep.HostPort(opts.Service)
		if err != nil {
			return nil, fmt.Errorf("fix probe: endpoint %q: %w", ep.Name, err)
		}
		raw, err := opts.Dial(ctx, "tcp", hp)
		if err != nil {
			return nil, fmt.Errorf("fix probe: endpoint %q: %w", ep.Name, err)
		}
		defer func() { _ = raw.Close() }()
		if dl, ok := ctx.Deadline(); ok {
			_ = raw.SetDeadline(dl)
		}
		stop := context.AfterFunc(ctx, func() { _ = raw.SetDeadline(time.Unix(1, 0)) })
		defer stop()
		conn := raw
		if opts.TLSConfig != nil {
			cfg := opts.TLSConfig.Clone()
			if cfg.ServerName == "" {
				cfg.ServerName, _, _ = net.SplitHostPort(hp)
			}
			tc := tls.Client(conn, cfg)
			if err := tc.HandshakeContext(ctx); err != nil {
				return nil, fmt.Errorf("fix probe: endpoint %q: TLS: %w", ep.Name, err)
			}
			conn = tc
		}
		logon := adminMessage(sid, msgTypeLogon, 1)
		logon.Body.SetString(98, "0") // EncryptMethod
		logon.Body.SetInt(108, 30)    // HeartBtInt
		logon.Body.SetBool(tagResetSeqNumFlag, true)
		if opts.Logon != nil {
			opts.Logon(logon)
		}
		if _, err := conn.Write([]byte(logon.String())); err != nil {
			return nil, fmt.Errorf("fix probe: endpoint %q: sending logon: %w", ep.Name, probeErr(ctx, err))
		}
		reply, err := readFIX(bufio.NewReader(conn), DefaultMaxMessageSize)
		if errors.Is(err, ErrMalformedStream) || errors.Is(err, ErrMessageTooLarge) {
			return nil, fmt.Errorf("fix probe: endpoint %q: %w", ep.Name, err)
		}
		if err != nil {
			return nil, fmt.Errorf("fix probe: endpoint %q: no logon answer: %w", ep.Name, probeErr(ctx, err))
		}
		m := quickfix.NewMessage()
		if err := parseMessage(m, reply); err != nil {
			return nil, fmt.Errorf("fix probe: endpoint %q: unparsable answer: %w", ep.Name, err)
		}
		mt, _ := m.Header.GetString(tagMsgType)
		if mt != msgTypeLogon {
			text, _ := m.Body.GetString(tagText)
			return nil, fmt.Errorf("fix probe: endpoint %q answered MsgType %s to the logon (%s)", ep.Name, safetext.Bound(mt), safetext.Bound(text))
		}
		_, _ = conn.Write([]byte(adminMessage(sid, "5", 2).String())) // Logout, best effort
		return m, nil
	}
}

func probeErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func adminMessage(sid quickfix.SessionID, msgType string, seq int) *quickfix.Message {
	m := quickfix.NewMessage()
	m.Header.SetString(8, sid.BeginString)
	m.Header.SetString(tagMsgType, msgType)
	m.Header.SetString(49, sid.SenderCompID)
	m.Header.SetString(56, sid.TargetCompID)
	m.Header.SetInt(34, seq)
	m.Header.SetString(52, time.Now().UTC().Format("20060102-15:04:05.000"))
	return m
}

// readFIX reads one FIX message (8=...|9=len|...|10=nnn|) of at most max
// bytes, framed as the relay frames a session's stream: bytes that are not a
// FIX message fail with ErrMalformedStream, a longer message with
// ErrMessageTooLarge, having read at most max bytes.
func readFIX(r *bufio.Reader, max int) ([]byte, error) {
	f := newFramer(max)
	var out []byte
	var one [1]byte
	for f.msgs == 0 {
		b, err := r.ReadByte()
		if err != nil {
			return nil, err
		}
		one[0] = b
		if _, err := f.scan(one[:]); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// parseMessage is quickfix.ParseMessage, with a panic of its parser on
// malformed input turned into an error.
func parseMessage(m *quickfix.Message, b []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed message (the FIX parser failed: %v)", p)
		}
	}()
	return quickfix.ParseMessage(m, bytes.NewBuffer(b))
}
