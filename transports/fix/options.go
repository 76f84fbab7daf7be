package fix

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/quickfixgo/quickfix"
	"github.com/quickfixgo/quickfix/config"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/venue"
)

// SequenceModel says how FIX sequence numbers behave when the path moves to
// another endpoint. There is no default: the broker's model must be chosen.
type SequenceModel int

const (
	// SequenceUnset is the zero value; NewInitiator refuses it.
	SequenceUnset SequenceModel = iota
	// SequenceContinue is for a broker that keeps ONE session, with one pair of
	// sequence numbers, across its regions: the initiator logs on to the new
	// region with the numbers it had, and gaps are repaired by ResendRequest.
	// Messages the new region missed are recovered (execution reports come back
	// as PossDup), but orders are never resent: they are gap-filled and
	// reconciled (see the package documentation).
	SequenceContinue
	// SequenceResetOnSwitch is for a broker whose regions are separate
	// sessions: the first logon on an endpoint other than the one last logged
	// on carries ResetSeqNumFlag=Y and both sides start again at 1. Nothing is
	// recovered by resend across regions (not even execution reports), so
	// reconcile is the only way to learn what happened in the old region.
	// Reconnects to the same endpoint keep their numbers.
	SequenceResetOnSwitch
	// SequenceResetOnLogon is for a broker that resets sequence numbers at
	// every logon (its acceptor runs with ResetOnLogon=Y, as many crypto and
	// gateway FIX APIs do): every logon carries ResetSeqNumFlag=Y and both
	// sides start at 1, on any endpoint. Nothing is ever recovered by resend;
	// orders unanswered when a connection ends are reconciled.
	SequenceResetOnLogon
)

// String returns the model's name.
func (m SequenceModel) String() string {
	switch m {
	case SequenceContinue:
		return "continue"
	case SequenceResetOnSwitch:
		return "reset-on-switch"
	case SequenceResetOnLogon:
		return "reset-on-logon"
	default:
		return "unset"
	}
}

// Options configures an Initiator.
type Options struct {
	// Sequence is required: the broker's sequence-number model.
	Sequence SequenceModel
	// Service is the endpoint service whose address sessions connect to;
	// default pathdialer.ServiceFIX ("fix").
	Service string
	// TLSConfig, when set, makes the relay speak TLS to the endpoint, verifying
	// the endpoint's own host name (ServerName is set per endpoint).
	// InsecureSkipVerify is refused. The quickfix Socket* TLS settings are
	// refused: TLS is configured here.
	TLSConfig *tls.Config
	// ReconnectInterval: how soon a session reconnects to the same endpoint
	// after its connection ended or a dial failed. A switch of the path does
	// not wait for it: the session dials the new endpoint as soon as the path
	// moves. Also the longest logon backoff once the counterparty should have
	// released the session (see LogonBackoff). Default 100 ms, at most 5 s.
	ReconnectInterval time.Duration
	// DialTimeout bounds the relay's dial (and TLS handshake) to the endpoint.
	// Default 5 s.
	DialTimeout time.Duration
	// StopGrace is how long Close lets quickfix log out politely before the
	// relay cuts the connections. Default 1 s.
	StopGrace time.Duration
	// Reconciler, when set, is bound to the Initiator so it can send status
	// requests and receive their answers (create it before the Path, because
	// the Path's Config needs its Reconcile func).
	Reconciler *Reconciler
	// ReplaceSocketConnect lets the sessions' settings name an address
	// (SocketConnectHost/Port, plain or numbered, as a quickfix configuration
	// file written for a direct connection does): it is replaced by the
	// relay's, and the Path chooses the endpoint. Default false: such
	// settings are refused, so no address the user wrote is ignored silently.
	ReplaceSocketConnect bool
	// OnRefusedResend, optional, is called (outside locks, on quickfix's
	// session goroutine: keep it short) for every order gap-filled instead of
	// resent.
	OnRefusedResend func(sessionID quickfix.SessionID, clOrdID, msgType string)
	// Logger receives structured logs; nil discards them. Messages and
	// string attributes are escaped (one record stays on one line) and cut
	// to 8 KiB before Logger's handler sees them.
	Logger *slog.Logger
	// TokenTag, when non-zero, is the FIX tag into which SendOrder writes the
	// ticket's fencing token (pathdialer.Ticket.Token, in decimal) on every
	// order (the message given to SendOrder is modified; an existing value of
	// the tag is replaced), so a broker or gateway that checks tokens rejects a writer whose
	// decision is stale. It must be a user-defined tag (5000 or above); for
	// example 9901, the tag the simulated broker checks in its token mode.
	// Default 0: no token is written.
	TokenTag quickfix.Tag
	// OnEvent, optional, receives the Initiator's own events (logon failures
	// and their diagnosis, the logon halt, a broker that does not support
	// OrderStatusRequest). It is called outside locks, from quickfix's or the
	// relay's goroutines: keep it short.
	OnEvent func(Event)
	// LogonBackoff bounds the wait before reconnecting after a failed logon:
	// the n-th consecutive failure waits a uniformly random time in
	// [0, min(Max, Initial·2ⁿ⁻¹)] (full jitter), so a broker refusing logons
	// is not stormed. Default {Initial: 200 ms, Max: 5 s}. No wait runs past
	// 2 × HeartBtInt after the last message heard on the session (when a
	// broker that keeps one session per identity releases a session dropped
	// without a Logout: Binance after 2 × HeartBtInt (
	// https://developers.binance.com/docs/binance-spot-api-docs/fix-api), quickfix acceptors
	// after about 2.4 ×), and from then on no wait is longer than
	// ReconnectInterval: the session resumes within about one
	// ReconnectInterval of the release.
	LogonBackoff pathdialer.Backoff
	// MaxMessageSize bounds, in bytes, each message the endpoint sends (from
	// "8=" to the CheckSum's SOH). The relay frames the endpoint's stream as
	// it passes (quickfix's own reader has no bound): a message declared or
	// found longer, or bytes that are not a FIX message where one must start,
	// cut the connection before they reach quickfix, and the cut is reported
	// to the Path as a failure of the endpoint (ErrMessageTooLarge,
	// ErrMalformedStream). Default DefaultMaxMessageSize (1 MiB); from 4 KiB
	// to 256 MiB.
	MaxMessageSize int
	// LogonFailureLimit: after this many consecutive failed logons of a
	// session on one endpoint, the last refused with a reason (sequence
	// numbers, credentials, a Logout), the Initiator halts FIX: the session
	// stops reconnecting, SendOrder fails at once with ErrLogonHalted
	// (wrapping pathdialer.ErrTradingHalted) whose text names the diagnosis
	// and, for sequence-number refusals, the SequenceModel to choose.
	// Resume, or the Path moving to another endpoint, lifts the halt.
	// Logons that are never answered back off but do not halt (the Path's
	// probes judge the endpoint's health). Default 10; negative means never
	// halt.
	LogonFailureLimit int
	// PreserveLogout lists the fields a Logout must carry for the venue to
	// keep the session's resting orders when it ends: Deribit's
	// DontCancelOnDisconnect, {9003: "Y"}. With it, when the Path leaves an
	// endpoint in preserve mode (pathdialer.Config.FenceMode), each session
	// connected there says goodbye before the Path closes its connection:
	// quickfix sends a Logout carrying these fields, in sequence, and the
	// farewell waits for the counterparty's Logout, at most
	// pathdialer.Config.FarewellTimeout (then the connection is aborted and
	// cancel-on-disconnect may fire: the open-order reconcile after the
	// switch reports what it cancelled). In flatten mode no Logout is sent.
	// Empty (the default): no farewell; the connection is aborted and the
	// venue's cancel-on-disconnect, where on, fires. Tags must be positive
	// and values non-empty.
	PreserveLogout map[quickfix.Tag]string
	// Standby, when set, keeps a hot standby session: a session of its own
	// (its own CompIDs) on every endpoint, logged on and heartbeating, so a
	// switch needs no logon. Off by default. See Standby.
	Standby *Standby
}

// Standby configures hot standby sessions: Sessions names, for every endpoint
// of the path, the session that trades there (each defined in the settings,
// each with its own SenderCompID). Every session connects to its own endpoint
// only and stays logged on there; SendOrder, given any of them, sends the
// order over the session of the ticket's endpoint, so a standby session never
// carries an order until the path has switched to its endpoint (the gate
// grants tickets only for the active endpoint), and the reconciler asks the
// new endpoint's session. Failover then costs a switch and a reconcile, no
// logon.
//
// The venue must allow a second live session per account: NewInitiator
// refuses a Standby whose Venue does not (venue.Profile.StandbyAllowed; an
// unknown fact refuses). Of the shipped profiles, binance-spot allows it
// (up to 5 order-entry connections per account, each with its own
// SenderCompID: Binance refuses a SenderCompID already live and locks it for
// 2 × HeartBtInt after a drop without Logout) and deribit allows it;
// coinbase-exchange-fix (one FIX session per API key) and
// ibkr-client-portal (one brokerage session) forbid it. Sources: Binance,
// https://developers.binance.com/docs/binance-spot-api-docs/fix-api; Coinbase Exchange,
// https://docs.cdp.coinbase.com/exchange/fix-api/order-entry-messages/order-entry-messages5; every profile field
// carries its own (go doc ./venue).
//
// A session whose endpoint the path has fenced (switched away from) cannot
// connect until that endpoint is active again: after a failover the old
// endpoint's session logs on again only when the path returns to it.
type Standby struct {
	// Venue is the venue's profile (package venue).
	Venue venue.Profile
	// Sessions maps every endpoint name of the path to its session.
	Sessions map[string]quickfix.SessionID
}

// check refuses a standby the venue forbids, or whose sessions do not cover
// the path's endpoints with distinct identities defined in settings.
func (sb *Standby) check(path *pathdialer.Path, settings *quickfix.Settings) error {
	if !sb.Venue.StandbyAllowed() {
		name := sb.Venue.Name
		if name == "" {
			name = "(unnamed)"
		}
		return fmt.Errorf("%w: Standby: venue %s does not allow a second live session (HotStandby: %v): a standby session there would knock the trading one off or be refused", ErrInvalidOptions, name, sb.Venue.HotStandby)
	}
	defined := settings.SessionSettings()
	senders := map[string]string{}
	for _, ep := range path.Endpoints() {
		sid, ok := sb.Sessions[ep.Name]
		if !ok {
			return fmt.Errorf("%w: Standby.Sessions names no session for endpoint %q", ErrInvalidOptions, ep.Name)
		}
		if other, dup := senders[sid.SenderCompID]; dup {
			return fmt.Errorf("%w: Standby.Sessions: endpoints %q and %q share SenderCompID %q; each endpoint's session needs its own", ErrInvalidOptions, other, ep.Name, sid.SenderCompID)
		}
		if _, ok := defined[sid]; !ok {
			return fmt.Errorf("%w: Standby.Sessions[%q] = %v is not defined in the settings", ErrInvalidOptions, ep.Name, sid)
		}
		senders[sid.SenderCompID] = ep.Name
	}
	for name := range sb.Sessions {
		if _, ok := path.Endpoint(name); !ok {
			return fmt.Errorf("%w: Standby.Sessions names endpoint %q, which the path does not have", ErrInvalidOptions, name)
		}
	}
	for sid := range defined {
		found := false
		for _, s := range sb.Sessions {
			found = found || s == sid
		}
		if !found {
			return fmt.Errorf("%w: session %v is in the settings but not in Standby.Sessions", ErrInvalidOptions, sid)
		}
	}
	return nil
}

// forbiddenSettings are quickfix settings that cannot work through the relay.
var forbiddenSettings = []struct{ key, why string }{
	{config.SocketUseSSL, "TLS is done by the relay: set Options.TLSConfig"},
	{config.SocketPrivateKeyFile, "TLS is done by the relay: set Options.TLSConfig"},
	{config.SocketCertificateFile, "TLS is done by the relay: set Options.TLSConfig"},
	{config.SocketCAFile, "TLS is done by the relay: set Options.TLSConfig"},
	{config.SocketPrivateKeyBytes, "TLS is done by the relay: set Options.TLSConfig"},
	{config.SocketCertificateBytes, "TLS is done by the relay: set Options.TLSConfig"},
	{config.SocketCABytes, "TLS is done by the relay: set Options.TLSConfig"},
	{config.SocketInsecureSkipVerify, "TLS is done by the relay: set Options.TLSConfig"},
	{config.SocketServerName, "TLS is done by the relay, with each endpoint's host name"},
	{config.SocketMinimumTLSVersion, "TLS is done by the relay: set Options.TLSConfig"},
	{config.ProxyType, "the path dials the broker: plug a SOCKS dialer into pathdialer.Config.Dial"},
	{config.ProxyHost, "the path dials the broker: plug a SOCKS dialer into pathdialer.Config.Dial"},
	{config.ProxyPort, "the path dials the broker: plug a SOCKS dialer into pathdialer.Config.Dial"},
	{config.ProxyUser, "the path dials the broker: plug a SOCKS dialer into pathdialer.Config.Dial"},
	{config.ProxyPassword, "the path dials the broker: plug a SOCKS dialer into pathdialer.Config.Dial"},
}

// resetSettings must not be Y: sequence resets are governed by Options.Sequence.
var resetSettings = []string{config.ResetOnLogon, config.ResetOnLogout, config.ResetOnDisconnect}

func (o *Options) validate() error {
	switch o.Sequence {
	case SequenceContinue, SequenceResetOnSwitch, SequenceResetOnLogon:
	default:
		return fmt.Errorf("%w: Options.Sequence must be chosen: SequenceContinue (one session across regions), SequenceResetOnSwitch (a session per region) or SequenceResetOnLogon (the broker resets at every logon)", ErrInvalidOptions)
	}
	for tag, v := range o.PreserveLogout {
		if tag <= 0 || strings.TrimSpace(v) == "" {
			return fmt.Errorf("%w: PreserveLogout[%d] = %q: tags must be positive and values non-empty (Deribit: {9003: \"Y\"})", ErrInvalidOptions, tag, v)
		}
	}
	if o.TokenTag != 0 && o.TokenTag < 5000 {
		return fmt.Errorf("%w: TokenTag %d is not a user-defined tag (5000 or above)", ErrInvalidOptions, o.TokenTag)
	}
	if o.LogonBackoff == (pathdialer.Backoff{}) {
		o.LogonBackoff = pathdialer.Backoff{Initial: 200 * time.Millisecond, Max: 5 * time.Second}
	}
	if o.LogonBackoff.Initial <= 0 || o.LogonBackoff.Max < o.LogonBackoff.Initial {
		return fmt.Errorf("%w: LogonBackoff is {Initial: %v, Max: %v}; need 0 < Initial <= Max", ErrInvalidOptions, o.LogonBackoff.Initial, o.LogonBackoff.Max)
	}
	if o.LogonFailureLimit == 0 {
		o.LogonFailureLimit = 10
	}
	if o.Service == "" {
		o.Service = pathdialer.ServiceFIX
	}
	if o.MaxMessageSize == 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.MaxMessageSize < minMaxMessageSize || o.MaxMessageSize > maxMaxMessageSize {
		return fmt.Errorf("%w: MaxMessageSize %d is outside [%d, %d] bytes", ErrInvalidOptions, o.MaxMessageSize, minMaxMessageSize, maxMaxMessageSize)
	}
	if o.TLSConfig != nil && o.TLSConfig.InsecureSkipVerify {
		return fmt.Errorf("%w: TLSConfig.InsecureSkipVerify is refused: an order path must verify the broker", ErrInvalidOptions)
	}
	if o.ReconnectInterval < 0 || o.DialTimeout < 0 || o.StopGrace < 0 {
		return fmt.Errorf("%w: negative duration", ErrInvalidOptions)
	}
	if o.ReconnectInterval == 0 {
		o.ReconnectInterval = 100 * time.Millisecond
	}
	if o.ReconnectInterval > 5*time.Second {
		return fmt.Errorf("%w: ReconnectInterval %v is above 5s: the session would lag the path", ErrInvalidOptions, o.ReconnectInterval)
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.StopGrace == 0 {
		o.StopGrace = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// checkEndpoints refuses a path whose endpoints cannot all serve the service.
func checkEndpoints(path *pathdialer.Path, service string) error {
	for _, ep := range path.Endpoints() {
		if _, err := ep.HostPort(service); err != nil {
			return fmt.Errorf("%w: endpoint %q has no usable %q address: %w", ErrInvalidOptions, ep.Name, service, err)
		}
	}
	return nil
}

// rewriteSettings returns new settings in which every session of user connects
// to its relay (addrs, by session ID), with Options.ReconnectInterval. The
// user's settings are not modified.
func rewriteSettings(user *quickfix.Settings, o *Options, listen func(quickfix.SessionID) (addr, proxyUser, proxyPass string, err error)) (*quickfix.Settings, error) {
	if user == nil {
		return nil, fmt.Errorf("%w: settings are nil", ErrInvalidOptions)
	}
	all := user.SessionSettings() // fresh merged clones: ours to modify
	if len(all) == 0 {
		return nil, fmt.Errorf("%w: settings define no session", ErrInvalidOptions)
	}
	out := quickfix.NewSettings()
	for sid, s := range all {
		for _, f := range forbiddenSettings {
			if s.HasSetting(f.key) {
				return nil, fmt.Errorf("%w: session %v sets %s: %s", ErrInvalidOptions, sid, f.key, f.why)
			}
		}
		if !o.ReplaceSocketConnect {
			if k := connectSetting(s); k != "" {
				return nil, fmt.Errorf("%w: session %v sets %s: the Path chooses the address a session connects to (the endpoints' %q service); remove the setting, or set Options.ReplaceSocketConnect to have it replaced", ErrInvalidOptions, sid, k, o.Service)
			}
		}
		for _, k := range resetSettings {
			if s.HasSetting(k) {
				if v, err := s.BoolSetting(k); err != nil || v {
					return nil, fmt.Errorf("%w: session %v sets %s=Y: sequence resets are governed by Options.Sequence", ErrInvalidOptions, sid, k)
				}
			}
		}
		switch sid.BeginString {
		case quickfix.BeginStringFIX42, quickfix.BeginStringFIX43, quickfix.BeginStringFIX44:
		default:
			return nil, fmt.Errorf("%w: session %v: BeginString %s is not supported (FIX.4.2 to FIX.4.4)", ErrInvalidOptions, sid, sid.BeginString)
		}
		addr, pu, pp, err := listen(sid)
		if err != nil {
			return nil, err
		}
		host, port := splitHostPort(addr)
		// quickfix dials through its relay as a SOCKS5 proxy authenticated
		// with the relay's own credentials; the target address is ignored.
		s.Set(config.ProxyType, "socks")
		s.Set(config.ProxyHost, host)
		s.Set(config.ProxyPort, port)
		s.Set(config.ProxyUser, pu)
		s.Set(config.ProxyPassword, pp)
		s.Set(config.SocketConnectHost, host)
		s.Set(config.SocketConnectPort, port)
		// quickfix cannot delete a setting: point every numbered address at the
		// relay too, so its round-robin stays on it.
		for i := 1; s.HasSetting(config.SocketConnectHost+strconv.Itoa(i)) || s.HasSetting(config.SocketConnectPort+strconv.Itoa(i)); i++ {
			s.Set(config.SocketConnectHost+strconv.Itoa(i), host)
			s.Set(config.SocketConnectPort+strconv.Itoa(i), port)
		}
		// quickfix reconnects to its relay at once; the relay waits
		// Options.ReconnectInterval, or less when the path switches.
		s.Set(config.ReconnectInterval, quickfixReconnect.String())
		if _, err := out.AddSession(s); err != nil {
			return nil, fmt.Errorf("%w: session %v: %w", ErrInvalidOptions, sid, err)
		}
	}
	return out, nil
}

// connectSetting names the first address setting (SocketConnectHost/Port,
// plain or numbered) that s sets, or "".
func connectSetting(s *quickfix.SessionSettings) string {
	for _, k := range []string{config.SocketConnectHost, config.SocketConnectPort} {
		if s.HasSetting(k) {
			return k
		}
	}
	for i := 1; i <= 16; i++ {
		for _, k := range []string{config.SocketConnectHost, config.SocketConnectPort} {
			if s.HasSetting(k + strconv.Itoa(i)) {
				return k + strconv.Itoa(i)
			}
		}
	}
	return ""
}

func splitHostPort(addr string) (string, string) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			return addr[:i], addr[i+1:]
		}
	}
	return addr, ""
}
