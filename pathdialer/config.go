package pathdialer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/venue"
)

// Service names used by the transports. Any non-empty name may be configured.
const (
	ServiceREST = "rest"
	ServiceWS   = "ws"
	ServiceFIX  = "fix"
)

// Endpoint is one path to the broker account, with an address for every service it
// serves. A switch moves every service of the account together.
type Endpoint struct {
	// Name is unique within the Path. Required.
	Name string `json:"name"`
	// Region is where the path lands. Required.
	Region string `json:"region"`
	// Priority orders failover targets, lowest first.
	Priority int `json:"priority"`
	// Primary marks the preferred endpoint (exactly one).
	Primary bool `json:"primary"`
	// Services maps a service name to its address: an http(s) URL for
	// "rest" (https://api-eu.broker.example), a ws(s) URL for "ws"
	// (wss://stream-eu.broker.example/ws), host:port for "fix". At least one
	// is required, and every endpoint of a Path must name the same services:
	// a switch moves them all together.
	Services map[string]string `json:"services"`
	// Jurisdiction the endpoint lies in ("EU", "US"), for
	// Engine.TargetJurisdictions. Optional.
	Jurisdiction string `json:"jurisdiction,omitempty"`
}

// Address returns the endpoint's address for a service.
func (e Endpoint) Address(service string) (string, bool) {
	a, ok := e.Services[service]
	return a, ok
}

// HostPort returns the host:port to dial for a service: the address itself when it
// is host:port, or the URL's host with the scheme's default port.
func (e Endpoint) HostPort(service string) (string, error) {
	a, ok := e.Services[service]
	if !ok {
		return "", fmt.Errorf("%w: endpoint %q has no %q address", ErrUnknownService, e.Name, service)
	}
	hp, err := hostPort(a)
	if err != nil {
		return "", fmt.Errorf("pathdialer: endpoint %q service %q: %w", e.Name, service, err)
	}
	return hp, nil
}

// hostPort never repeats the address in its errors: addresses may carry
// credentials (user information, a key in the query).
func hostPort(addr string) (string, error) {
	if !strings.Contains(addr, "://") {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			var ae *net.AddrError
			if errors.As(err, &ae) {
				err = errors.New(ae.Err)
			}
			return "", fmt.Errorf("address is neither a URL nor host:port: %w", err)
		}
		if host == "" {
			return "", errors.New("host:port address has no host")
		}
		if err := checkPort(port); err != nil {
			return "", err
		}
		return addr, nil
	}
	u, err := url.Parse(addr)
	if err != nil {
		// url.Error repeats the whole URL, credentials included: keep only the cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("address is not a valid URL: %w", err)
	}
	if u.Host == "" {
		return "", fmt.Errorf("URL %q has no host", safeURL(u))
	}
	if u.Port() != "" {
		if err := checkPort(u.Port()); err != nil {
			return "", err
		}
		return u.Host, nil
	}
	switch u.Scheme {
	case "https", "wss":
		return net.JoinHostPort(u.Hostname(), "443"), nil
	case "http", "ws":
		return net.JoinHostPort(u.Hostname(), "80"), nil
	}
	return "", fmt.Errorf("URL %q has no port and scheme %q has no default", safeURL(u), u.Scheme)
}

// checkPort accepts a port number (1-65535) or a service name such as "https"
// (letters, digits and hyphens, as net.Dial resolves them).
func checkPort(port string) error {
	if port == "" {
		return errors.New("address has an empty port")
	}
	if n, err := strconv.Atoi(port); err == nil {
		if n < 1 || n > 65535 {
			return fmt.Errorf("port %d is out of range 1-65535", n)
		}
		return nil
	}
	for _, r := range port {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-') {
			return errors.New("port is neither a number nor a service name")
		}
	}
	return nil
}

// safeURL renders a URL without user information, query or fragment, which may
// carry credentials.
func safeURL(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// ProbeFunc checks one endpoint over the path orders take (authenticated, on the
// order path). It must honour ctx; a nil error is a success. See TCPProbe for why a
// bare connect is the weakest possible choice.
type ProbeFunc func(ctx context.Context, ep Endpoint) error

// Fence describes the path being fenced.
type Fence struct {
	// Endpoint is the endpoint being switched away from.
	Endpoint Endpoint
	// To is the endpoint the engine intends to switch to.
	To string
	// Token is the fencing token of the path being left.
	Token uint64
	// Attempt counts from 1.
	Attempt int
	// Failback is true when the switch is a failback to the primary.
	Failback bool
	// Mode is how to leave the old path (Config.FenceMode resolved): with
	// venue.Preserve, leave the way the venue keeps resting orders (a
	// WebSocket logout call, a FIX Logout with the venue's opt-out tag);
	// with venue.Flatten, let cancel-on-disconnect fire. Effect is what the
	// venue's profile says leaving in Mode does to resting orders.
	Mode   venue.FenceMode
	Effect venue.SwitchEffect
}

// FenceFunc makes the outgoing path unable to submit orders (stop a process, revoke
// a credential, close a session). It runs after the local fence (this process's
// connections to the endpoint closed, new dials refused). A returned error means the
// fence is not in place: nothing switches, the gate stays held, and it is retried.
type FenceFunc func(ctx context.Context, f Fence) error

// LocalFenceOnly is an explicit FenceFunc for a deployment in which this process is
// the only one that trades the account: pathdialer's local fence (closing every
// tracked connection to the old endpoint and refusing new dials to it) is then the
// whole fence. Do not choose it when another process or region can submit.
func LocalFenceOnly(context.Context, Fence) error { return nil }

// Reconciliation is what a ReconcileFunc must settle before flow is released.
type Reconciliation struct {
	// From and To are the endpoint names; equal when resuming after a halt on the
	// same endpoint.
	From, To string
	// Token is the fencing token flow will be released under.
	Token uint64
	// Reason: "failover", "failback" or "resume after halt".
	Reason string
	// Tickets are the orders whose fate is not known: in flight when the switch
	// began, or finished with an unknown outcome, on any earlier token.
	Tickets []TicketInfo
	// Attempt counts from 1.
	Attempt int
	// Service, with Config.ReconcileByService, is the service whose tickets these
	// are ("" for every service without its own reconciler, and always
	// without ReconcileByService).
	Service string
}

// Fate is what reconciliation found for one order.
type Fate int

const (
	// FateUndetermined: the reconciler could not tell.
	FateUndetermined Fate = iota
	// FateFilled: the broker filled it.
	FateFilled
	// FateResting: the broker holds it open.
	FateResting
	// FateNotReceived: the broker has no record of it. Provisional (see
	// Path.MayResend, which says when it is final): a copy may
	// still be in the network (a healed partition delivers what it held), so
	// send it again only under the SAME client order ID, which the broker's
	// idempotency turns into one order; never under a new one.
	FateNotReceived
	// FateCanceled: the broker canceled it.
	FateCanceled
	// FateRejected: the broker rejected it.
	FateRejected
)

var fateNames = [...]string{"UNDETERMINED", "FILLED", "RESTING", "NOT_RECEIVED", "CANCELED", "REJECTED"}

// String returns the upper-case name.
func (f Fate) String() string {
	if f >= 0 && int(f) < len(fateNames) {
		return fateNames[f]
	}
	return fmt.Sprintf("Fate(%d)", int(f))
}

// MarshalText renders the fate as its String form.
func (f Fate) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// Settlement is one order's fate as found by a reconciler.
type Settlement struct {
	OrderID string `json:"order_id"`
	Service string `json:"service"`
	Fate    Fate   `json:"fate"`
	Detail  string `json:"detail,omitempty"`
	// Final and Provisional are set by the Path (a Reconcile leaves them
	// alone): Final when no later evidence can change the fate; Provisional
	// for a NOT_RECEIVED found while the order's path could still deliver it
	// (see Path.MayResend). An UNDETERMINED fate is neither.
	Final       bool `json:"final"`
	Provisional bool `json:"provisional,omitempty"`
}

// ReconcileFunc settles the orders in r against the broker's own view of the book,
// querying through the new path (reads are never held). Flow is released only after
// it returns a nil error; it must honour ctx. With an error it may still return the
// orders it did settle: the Path keeps those answers and the next attempt is asked
// only about the orders still open.
type ReconcileFunc func(ctx context.Context, r Reconciliation) ([]Settlement, error)

// NoReconcile is the explicit choice to skip reconciliation: flow is released right
// after a switch with nothing settled. There is no silent default; choose it only
// when nothing you send can be in flight across a switch.
func NoReconcile(context.Context, Reconciliation) ([]Settlement, error) { return nil, nil }

// ReconcileAll runs several reconcilers in order (for example REST and FIX, each
// settling the tickets of its own service) and succeeds only when all succeed.
func ReconcileAll(fns ...ReconcileFunc) ReconcileFunc {
	return func(ctx context.Context, r Reconciliation) ([]Settlement, error) {
		var all []Settlement
		for i, fn := range fns {
			s, err := fn(ctx, r)
			all = append(all, s...)
			if err != nil {
				return all, fmt.Errorf("pathdialer: reconciler %d of %d: %w", i+1, len(fns), err)
			}
		}
		return all, nil
	}
}

// Backoff is a capped exponential backoff: Initial, doubled after every failure, at
// most Max.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
}

func (b Backoff) delay(attempt int) time.Duration {
	d := b.Initial
	for i := 1; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

func (b Backoff) validate(name string) error {
	if b.Initial <= 0 || b.Max < b.Initial {
		return configError(name, "", "%s is {Initial: %v, Max: %v}; need 0 < Initial <= Max", name, b.Initial, b.Max)
	}
	return nil
}

// Config configures a Path. Start from DefaultConfig and set the fields of
// the first block, "Start here"; the blocks after it (timing, verdicts,
// admission, resting orders, coordination, plumbing) have defaults from
// DefaultConfig or Venue, and a first configuration can ignore them.
type Config struct {
	// ===== Start here: set these. =====
	// Everything after this block has a default, from DefaultConfig or from
	// Venue, that a first configuration leaves alone.
	//
	// Endpoints of the account; at least two, exactly one Primary.
	Endpoints []Endpoint
	// Probe is required: it should exercise the trade path.
	Probe ProbeFunc
	// Fencer closes the old path at a switch. Required unless
	// Engine.BrokerFencesAtLogon; choose LocalFenceOnly explicitly when the
	// local fence is the whole fence.
	//
	// The fence choice is one of three: the local fence alone
	// (LocalFenceOnly), a Fencer the broker confirms (a kill switch, a token
	// advance: set BrokerFencesViaFencer too), or a broker that fences the
	// old session when the new one logs on (Engine.BrokerFencesAtLogon: no
	// fence step at all). The two flags' names begin alike because both
	// declare the same thing, that the broker enforces the fence; their
	// endings say how.
	Fencer FenceFunc
	// BrokerFencesViaFencer declares that the Fencer's nil return means the broker
	// itself confirmed the old endpoint can no longer book this account's
	// orders (a kill switch, a one-session-per-credential logon, a fencing
	// token advanced at the broker). A NOT_RECEIVED found for an order sent
	// through an endpoint so fenced (and not unfenced since) is final once
	// the venue's false-negative horizon passed since the fence, and only
	// where Venue says the venue can fence or check fencing tokens.
	// Leave it false when the Fencer only stops this side (the local fence, a
	// process, a route): NOT_RECEIVED is then provisional until Quarantine
	// passed and a re-query still finds nothing.
	BrokerFencesViaFencer bool
	// Reconcile settles, after a switch, the orders of every service not
	// named in ReconcileByService: it is the function, and rest.Reconciler
	// and fix.Reconciler are types whose Reconcile method fits here
	// (cfg.Reconcile = restRec.Reconcile). Required unless
	// ReconcileByService is set; then, left nil, only the services named
	// there may submit (Acquire refuses any other with ErrInvalidConfig, so
	// no order can escape reconciliation). Choose NoReconcile explicitly to
	// skip reconciliation.
	Reconcile ReconcileFunc
	// ReconcileByService, optional, reconciles and releases services
	// independently, one function per service name:
	// after a switch each service named here is settled by its own function,
	// concurrently with the others, and its submissions are released as soon
	// as its own reconcile succeeded (a REST order does not wait for a FIX
	// logon). Services not named here are settled by Reconcile and released
	// when every reconcile succeeded. See the package documentation for the
	// exact rules.
	ReconcileByService map[string]ReconcileFunc
	// ReconcileListings, optional, names the reconcile functions that read
	// the venue's order listings instead of looking each order up (for a
	// venue without a lookup by client order ID: rest.ReconcileOptions'
	// ListURLs, rest.KrakenSpotOrderListing), keyed like ReconcileByService
	// ("" for Reconcile), each with how many requests one call makes
	// whatever the number of orders it is asked about
	// (rest.Reconciler.ListingRequests). The Path's re-queries of
	// provisional and watched NOT_RECEIVED verdicts (ReasonRequery) through
	// such a function ask about every due order in one call, and the next
	// waits that many of Venue's LookupInterval; through any other function
	// a call asks about at most one budget window's orders and the next
	// waits one LookupInterval per order asked about. So a late landing is
	// reported within MaxCopyHold plus one listing's lookup intervals of its
	// booking however many orders wait. Each key is "" or a key of
	// ReconcileByService; each value >= 1.
	ReconcileListings map[string]int
	// Venue states what the broker guarantees (client-order-ID
	// deduplication, how long a lookup may wrongly say "not found", whether
	// it can fence, its lookup budget): verdicts, MayResend, Quarantine's
	// default and the late-landing watch are read from it (see
	// venue.Profile, venue.ByName for the shipped profiles). The zero value
	// is venue.Conservative(), the most conservative venue: a NOT_RECEIVED
	// then becomes final only after a quarantine of 15 min plus MaxCopyHold,
	// and MayResend never allows a resend (nothing proves a copy cannot be
	// booked as a second order). New refuses a profile that fails its
	// Validate.
	Venue venue.Profile

	// ===== Timing and retries: defaults from DefaultConfig. =====
	//
	// Engine holds the decision thresholds. Its Probe must be nil (the Path sets
	// it from Probe) and its Clock nil (the Path runs on the system clock).
	Engine engine.Config
	// ProbeInterval between probe rounds. Must be > 0.
	ProbeInterval time.Duration
	// ProbeTimeout for one probe; a probe that has not returned by then is a
	// failure. Must be > 0 and, with ProbeJitter, below ProbeInterval.
	ProbeTimeout time.Duration
	// ProbeJitter: each probe of a round starts after a random delay in
	// [0, ProbeJitter), so probes of many processes do not align. >= 0.
	ProbeJitter time.Duration
	// SuspectAfter: a probe of the active endpoint that has not answered after
	// SuspectAfter, or that timed out while the endpoint is not DOWN, makes the
	// endpoint suspect: it is probed again at once, beside the late probe,
	// instead of at the next round (at most one such probe at a time, and at
	// most Engine.FailureThreshold of them between two rounds); so does an
	// order on it still unanswered after SuspectAfter, or an order on it that
	// failed (a probe that then fails at once is repeated at once while the
	// orders fail too). Each probe still counts once and DOWN still takes
	// Engine.FailureThreshold failures in a row; a late probe that answers is
	// a success. On a blackhole the active endpoint is then DOWN about
	// SuspectAfter + ProbeTimeout after its first probe began, not a whole
	// ProbeInterval later. Zero means ProbeTimeout/2 for orders, and for
	// probes while orders succeed on the endpoint; while none has succeeded
	// there for a ProbeInterval, a probe is late at twice the median latency
	// of the endpoint's recent probes (at least ProbeTimeout/16, at most
	// ProbeTimeout/2). Negative turns it off; otherwise it must be below
	// ProbeTimeout.
	SuspectAfter time.Duration
	// FenceTimeout bounds one Fencer call. Must be > 0.
	FenceTimeout time.Duration
	// FenceBackoff between failed fence attempts.
	FenceBackoff Backoff
	// FenceAttempts failed fence attempts in a row turn the hold into a halt
	// (attempts continue in the background). Must be >= 1.
	FenceAttempts int
	// ReconcileTimeout bounds one Reconcile function call. Must be > 0.
	ReconcileTimeout time.Duration
	// ReconcileBackoff between failed reconcile attempts.
	ReconcileBackoff Backoff
	// ReconcileAttempts failed attempts in a row turn the hold into a halt
	// (attempts continue in the background; success releases flow). >= 1.
	ReconcileAttempts int
	// InflightGrace: after the fence, how long the switch waits for tickets still
	// in flight on the old path to finish before handing them to reconciliation
	// as in flight. >= 0.
	InflightGrace time.Duration
	// SettleUnknown: an order that finished with an unknown outcome while no
	// switch is under way is handed to the reconcile function this long after it
	// finished (with others that joined meanwhile; Reason "settle unknown
	// outcomes", From = To = the active endpoint). Submissions are not held for
	// it: those orders are already out, and new orders are other orders. A
	// failure is retried with ReconcileBackoff and never halts. 0 turns it off:
	// unknown orders then wait for the next switch or resume. While trading is
	// halted there is no path to settle them through: they are settled by the
	// reconcile that precedes the resume (Unknown and Snapshot list them
	// meanwhile; the same holds for the re-query of provisional verdicts).
	// >= 0.
	SettleUnknown time.Duration
	// StartWait: Start waits (probing every ProbeInterval) until at least one
	// endpoint is eligible, at most this long, then returns an error wrapping
	// ErrNoEligibleEndpoint with the gate halted (the Path keeps running and
	// resumes when an endpoint becomes eligible). 0 = Start opens the gate
	// after one probe round whatever it found. >= 0.
	StartWait time.Duration

	// ===== Verdicts and late landings: defaults from Venue. =====
	//
	// MaxCopyHold is the longest a copy of an order can be held between this
	// process and the venue's book (socket buffers, proxies, the network, the
	// venue's gateway) and still be booked. 0 means DefaultMaxCopyHold.
	// A provisional NOT_RECEIVED is looked up again every MaxCopyHold (at
	// least the venue's LookupInterval), so a copy that lands meanwhile is
	// reported within about that long of the venue's lookups showing it
	// (plus one budgeted lookup; see the package documentation). >= 0.
	MaxCopyHold time.Duration
	// Quarantine is how long a provisional NOT_RECEIVED waits before the
	// re-query that can make it final (the early looks before it only find
	// late landings). It must cover the venue's lookup
	// false-negative horizon plus MaxCopyHold (Venue.MinQuarantine): New
	// refuses a shorter one, with the reason. 0 means exactly that minimum.
	// >= 0.
	Quarantine time.Duration

	// ===== Admission, optional: which endpoints may carry orders. =====
	//
	// Identity, optional, asks every endpoint who it fronts, at Start and every
	// IdentityInterval; the answer is compared with ExpectedIdentity. With
	// Identity set, admission is required (the Path sets
	// Engine.RequireAdmission): an endpoint is a target only after a check
	// verified it, within Engine.VerificationMaxAge, and every switch
	// re-proves the identity of the endpoint it goes to before flow is
	// released there (SwitchIdentityCheck). A mismatch makes the endpoint
	// ineligible whatever its health (an active one warrants failover, and the
	// gate never opens on it). See admission.go for the comparison rule.
	Identity IdentityFunc
	// ExpectedIdentity is what every endpoint must front; with Identity set it
	// must name something to compare (empty fields are not compared). Values
	// are compared exactly as written: New refuses blank Extra values and
	// values with leading or trailing white space.
	ExpectedIdentity Identity
	// IdentityInterval between identity checks. Default 1 min.
	IdentityInterval time.Duration
	// IdentityTimeout bounds one identity check, whatever the IdentityFunc
	// does with its context: a check still running then is inconclusive.
	// Default 5 s.
	IdentityTimeout time.Duration
	// SwitchIdentityCheck (default on, with Identity set) re-proves identity
	// at every switch, however recent the last verification: when a switch
	// (failover, failback, or an Assign) begins, the endpoint it goes to is
	// asked who it fronts, alongside the fence and the reconcile, and flow is
	// released onto it only once that answer verified it. A check quicker
	// than fence + reconcile adds nothing to the hold; a slower one holds
	// until it answers (at most IdentityTimeout). On a mismatch the gate
	// halts naming it, and the Path fails over elsewhere or stays halted; a
	// check that could not be made halts too, and is repeated every
	// ProbeInterval until one verifies the endpoint. Turned off, a switch
	// trusts a verification younger than Engine.SwitchVerificationAge (set
	// one then: the default is 0, which adds no re-check). Ignored without
	// Identity.
	SwitchIdentityCheck bool
	// TradePathCheck, optional, checks the path orders take (an authenticated
	// order-status query, a test order the broker rejects in a known way). It
	// runs every probe round, bounded by ProbeTimeout, on each endpoint taken
	// out by a gray failure (DOWN on live-traffic evidence while its probe
	// passed), and on one back from it until an order succeeds there: its
	// success is the evidence that lets the endpoint back at once, its
	// failure keeps it out (FailureThreshold failures in a row after it came
	// back make a gray failure again).
	//
	// Left nil, the Path uses the check a transport offers
	// (Path.OfferTradePathCheck): a rest.Reconciler given a rest.Transport
	// with SendLookupsVia offers its order lookup of an order ID never sent,
	// through the endpoint checked, a "not found" being a success — the same
	// read that failed reconcile lookups take an endpoint out with, so a
	// burst of them costs its own length and a probe round or two. Being a
	// lookup, it cannot vouch for submission: after the broker answered
	// orders there with a server error (a transport's unknown-outcome error
	// that is a ServerAnswered saying so), its success does not bring the
	// endpoint back while another carries flow; when trading would otherwise
	// halt, it does, at most once per failback cooldown (the next order
	// tells). Set TradePathCheck to a check that exercises submission (a
	// test order the broker rejects in a known way) to end such a failure
	// at once. With no
	// check set or offered, a gray failure ends only after
	// engine.Config.GrayFailbackWait, or when an order succeeds there: the
	// probe never stands in for a trade-path check, halted or not (it could
	// not see the failure when it began).
	TradePathCheck ProbeFunc
	// DegradedReads: when the only healthy endpoints lie outside
	// Engine.TargetJurisdictions, reads (ReadEndpoint) go to the best of them
	// while submissions stay halted with an error naming the rule. Default off:
	// plain halt. With it, a rule that no backup satisfies is accepted: "fail
	// over to a read-only mode rather than across borders" is a primary in
	// the EU, a backup in the US, TargetJurisdictions ["EU"] and DegradedReads
	// (an outage of the primary halts orders and moves reads to the US).
	// Without it New refuses such a rule: failover could never happen.
	DegradedReads bool

	// ===== Resting orders across a switch, optional. =====
	//
	// Unfence, optional, is called when a fenced endpoint becomes active again
	// (failback, or a switch abandoned after the fence), to undo what Fencer did.
	Unfence FenceFunc
	// FenceMode is how a switch leaves the old path: FencePreserve (the way
	// the venue keeps resting orders) or FenceFlatten (let
	// cancel-on-disconnect fire, then confirm the cancels). The zero value,
	// FenceModeDefault, takes preserve where Venue documents a way to keep
	// orders and flatten elsewhere; Snapshot.Fence shows the mode in force.
	FenceMode FenceMode
	// FarewellTimeout bounds each connection's farewell in preserve mode
	// (Conn.SetFarewell). Default 500 ms. > 0.
	FarewellTimeout time.Duration
	// DeadMan, optional, arms the venue's dead-man timer on the endpoint a
	// switch goes to before the old path is fenced: the fence waits for it,
	// at most DeadManTimeout a try; a failure holds the switch loudly
	// (EventDeadManFailure, the gate's cause, Snapshot.DeadMan), is retried
	// with FenceBackoff, and halts after FenceAttempts in a row; a failover
	// moves instead to the next eligible endpoint when its target goes DOWN,
	// or when its arm failed FenceAttempts times in a row (that target is
	// passed over for the rest of the switch); a failback
	// arms it before holding anything, and a failure gives the failback up
	// (FailbackBackoff). Switches
	// through Engine.BrokerFencesAtLogon (no fence step) arm it right after the
	// switch, before the reconcile.
	DeadMan DeadManFunc
	// DeadManTimeout bounds one DeadMan call. Default 5 s. > 0.
	DeadManTimeout time.Duration
	// FailbackBackoff spaces the tries of a failback that could not be
	// completed. A failback is optional (the backup carries flow), so what
	// can fail in it is done before anything is held: the DeadMan arm on the
	// primary and, with Identity, the primary's identity re-proof run while
	// the gate stays open on the backup (a failed TradePathCheck already keeps
	// the primary from being a failback target). When one of them fails, or
	// the fence then fails once, the failback is abandoned at once
	// (EventFailbackAbandoned says why and when it is tried next) and not
	// tried again for Initial, doubling with each failback abandoned in a row
	// up to Max; a completed switch starts the count again. So a failback
	// that does not happen holds the backup at most once, for one fence
	// (FenceTimeout) and the reconcile that resumes flow on it, per try.
	// Failover is never delayed by it. Default {Initial: 30 s, Max: 10 min};
	// 0 < Initial <= Max.
	FailbackBackoff Backoff
	// OpenOrders, optional, reconciles resting orders after every switch, by
	// service: the application's open orders against the venue's, read
	// through the new path CODSettle after every fence (see CODSettle for
	// the read again when a late cancel is due), with each difference
	// reported with its cause (EventOpenOrderDiff, EventRestingCancelled,
	// Snapshot.OpenOrders). Submissions are not held for it.
	OpenOrders map[string]OpenOrderCheck
	// CODSettle is how long after the fence the venue's open orders are
	// first read: long enough for a cancel-on-disconnect the venue applies
	// when the connection closes. A venue that detects the drop by a missed
	// heartbeat cancels later, when it times the silent connection out; a
	// connection that declares that time (Conn.SetCODWithin: the FIX
	// transport derives it from each session's HeartBtInt) has the venue
	// read again once it has passed, and every order cancelled by then is
	// reported as cancelled by the switch whose fence cut it. Orders the
	// switch's own reconcile settled RESTING are read with the
	// application's. Default 2 s. >= 0.
	CODSettle time.Duration

	// ===== Coordination, optional: several processes, one decider. =====
	//
	// ExternalDecisions hands every switch to a coordinator (coord/etcd): the
	// Path probes, reports and settles unknown outcomes, but switches, holds and
	// halts only through Assign, Hold, Halt and Resume.
	ExternalDecisions bool

	// ===== Observing and plumbing, optional. =====
	//
	// OnEvent, optional, receives every event in order, from one goroutine,
	// never under a lock: it may call the Path (Snapshot, Acquire), but not
	// Close, which waits for it. A slow hook delays later events, not the Path.
	OnEvent func(Event)
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Dial opens every tracked connection (the raw TCP connection; TLS is the
	// transport's). Nil means a net.Dialer with a 5 s timeout and 15 s keep-alive.
	// Plug a SOCKS or interface-bound dialer here.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// AllowPlaintext lets a "rest" address be a plain http:// URL, and a
	// "ws" address a plain ws:// URL, to a host that is not loopback.
	// Default false: such an address is refused, since every order, every
	// message and the credentials in the headers and the handshake would
	// cross the network in the clear. Loopback addresses (127.0.0.0/8, ::1,
	// localhost) are always allowed.
	AllowPlaintext bool
}

// DefaultConfig returns a Config in which every field but Endpoints, Probe,
// Fencer and Reconcile (or ReconcileByService) is set; set those four and
// New accepts it. Its values, each with what it means (a field not listed
// is left zero, and its doc says what zero means):
//
//   - ProbeInterval: 1s between probe rounds.
//   - ProbeTimeout: 500ms for one probe.
//   - ProbeJitter: 100ms, the widest random delay before each probe;
//     ProbeTimeout + ProbeJitter must stay below ProbeInterval, so a
//     shorter ProbeInterval needs these lowered too.
//   - FenceTimeout: 5s for one Fencer call.
//   - FenceBackoff: {Initial: 100ms, Max: 5s} between failed fence attempts.
//   - FenceAttempts: 5 failed in a row halt trading.
//   - ReconcileTimeout: 10s for one reconcile call.
//   - ReconcileBackoff: {Initial: 100ms, Max: 5s} between failed attempts.
//   - ReconcileAttempts: 5 failed in a row halt trading.
//   - InflightGrace: 1s for orders in flight on the old path after the fence.
//   - SettleUnknown: 1s after an order of unknown outcome before it is
//     reconciled without a switch.
//   - StartWait: 10s, the longest Start waits for an eligible endpoint (a
//     desk would rather hear at once that nothing can carry an order than
//     open a gate onto it).
//   - MaxCopyHold: 10s (DefaultMaxCopyHold).
//   - IdentityInterval: 1m between identity checks (with Identity).
//   - IdentityTimeout: 5s for one identity check.
//   - SwitchIdentityCheck: true, identity re-proved at every switch.
//   - FarewellTimeout: 500ms for each connection's farewell.
//   - DeadManTimeout: 5s for one DeadMan call.
//   - FailbackBackoff: {Initial: 30s, Max: 10m} between failbacks given up.
//   - CODSettle: 2s after the fence before the venue's open orders are read.
//   - Engine: engine.DefaultConfig() (its doc lists its values: DOWN after
//     3 failures in a row, fresh for 5s, failback after a 1m cooldown and 5
//     successes of the primary), except
//   - Engine.VerificationMaxAge: 3m, how long an identity verification
//     lasts.
func DefaultConfig() Config {
	return Config{
		Engine:              engine.DefaultConfig(),
		ProbeInterval:       time.Second,
		ProbeTimeout:        500 * time.Millisecond,
		ProbeJitter:         100 * time.Millisecond,
		FenceTimeout:        5 * time.Second,
		FenceBackoff:        Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
		FenceAttempts:       5,
		ReconcileTimeout:    10 * time.Second,
		ReconcileBackoff:    Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
		ReconcileAttempts:   5,
		InflightGrace:       time.Second,
		SettleUnknown:       time.Second,
		IdentityInterval:    time.Minute,
		IdentityTimeout:     5 * time.Second,
		SwitchIdentityCheck: true,
		MaxCopyHold:         DefaultMaxCopyHold,
		StartWait:           defaultStartWait,
		FarewellTimeout:     500 * time.Millisecond,
		DeadManTimeout:      5 * time.Second,
		FailbackBackoff:     Backoff{Initial: 30 * time.Second, Max: 10 * time.Minute},
		CODSettle:           2 * time.Second,
	}.withAdmissionDefaults()
}

// Validate checks every field as written and names the first that cannot work.
func (c Config) Validate() error {
	switch {
	case c.ProbeInterval == 0 && c.ProbeTimeout == 0 && c.FenceTimeout == 0 && c.ReconcileTimeout == 0 && c.Engine.FailureThreshold == 0:
		// Not started from DefaultConfig: naming the first missing field
		// would send the reader through every timing field in turn.
		return configError("ProbeInterval, ProbeTimeout, FenceTimeout, ReconcileTimeout and Engine.FailureThreshold", "", "the timing and safety fields are all zero: start from DefaultConfig() and set Endpoints, Probe, Fencer and ReconcileByService (or Reconcile) on it")
	case c.Probe == nil:
		return configError("Probe", "", "Probe is required (a TCP connect proves neither authentication nor order acceptance; see TCPProbe)")
	case c.Engine.Probe != nil:
		return configError("Engine.Probe", "", "Engine.Probe must be nil; set Config.Probe")
	case c.Engine.Clock != nil:
		return configError("Engine.Clock", "", "Engine.Clock must be nil; the Path runs on the system clock")
	case c.ProbeInterval <= 0:
		return configError("ProbeInterval", "", "ProbeInterval is %v, must be > 0", c.ProbeInterval)
	case c.ProbeTimeout <= 0:
		return configError("ProbeTimeout", "", "ProbeTimeout is %v, must be > 0", c.ProbeTimeout)
	case c.ProbeJitter < 0:
		return configError("ProbeJitter", "", "ProbeJitter is %v, must be >= 0", c.ProbeJitter)
	case c.ProbeTimeout+c.ProbeJitter >= c.ProbeInterval:
		return configError("ProbeTimeout and ProbeJitter", "", "ProbeTimeout (%v) plus ProbeJitter (%v) must be below ProbeInterval (%v), or probe rounds overlap", c.ProbeTimeout, c.ProbeJitter, c.ProbeInterval)
	case c.SuspectAfter >= c.ProbeTimeout:
		return configError("SuspectAfter", "", "SuspectAfter (%v) must be below ProbeTimeout (%v) (zero means ProbeTimeout/2, negative turns it off)", c.SuspectAfter, c.ProbeTimeout)
	case c.Engine.MaxHealthAge < 2*c.ProbeInterval:
		return configError("Engine.MaxHealthAge", "", "Engine.MaxHealthAge (%v) must be at least twice ProbeInterval (%v): one late probe round must not make every endpoint stale", c.Engine.MaxHealthAge, c.ProbeInterval)
	case c.Fencer == nil && !c.Engine.BrokerFencesAtLogon:
		return configError("Fencer", "", "Fencer is required unless Engine.BrokerFencesAtLogon (choose LocalFenceOnly explicitly if this process is the only one trading the account)")
	case c.FenceTimeout <= 0:
		return configError("FenceTimeout", "", "FenceTimeout is %v, must be > 0", c.FenceTimeout)
	case c.FenceAttempts < 1:
		return configError("FenceAttempts", "", "FenceAttempts is %d, must be >= 1", c.FenceAttempts)
	case c.Reconcile == nil && len(c.ReconcileByService) == 0:
		return configError("Reconcile", "", "Reconcile is required unless ReconcileByService names every service that submits orders (choose NoReconcile explicitly to skip reconciliation)")
	case c.ReconcileTimeout <= 0:
		return configError("ReconcileTimeout", "", "ReconcileTimeout is %v, must be > 0", c.ReconcileTimeout)
	case c.ReconcileAttempts < 1:
		return configError("ReconcileAttempts", "", "ReconcileAttempts is %d, must be >= 1", c.ReconcileAttempts)
	case c.InflightGrace < 0:
		return configError("InflightGrace", "", "InflightGrace is %v, must be >= 0", c.InflightGrace)
	case c.Engine.RequireAdmission && c.Identity == nil:
		return configError("Engine.RequireAdmission", "", "Engine.RequireAdmission needs an Identity check")
	case c.Identity != nil && strings.TrimSpace(c.ExpectedIdentity.Account) == "" && c.ExpectedIdentity.Entity == "" && len(c.ExpectedIdentity.Entitlements) == 0 && len(c.ExpectedIdentity.Extra) == 0:
		return configError("ExpectedIdentity", "", "ExpectedIdentity is empty: an Identity check needs something to compare (ExpectedIdentity.Account, Entity, Entitlements or Extra)")
	case c.Identity != nil && (c.IdentityInterval <= 0 || c.IdentityTimeout <= 0):
		return configError("IdentityInterval and IdentityTimeout", "", "IdentityInterval (%v) and IdentityTimeout (%v) must be > 0", c.IdentityInterval, c.IdentityTimeout)
	case c.DegradedReads && len(c.Engine.TargetJurisdictions) == 0:
		return configError("DegradedReads", "", "DegradedReads needs Engine.TargetJurisdictions")
	case slices.ContainsFunc(slices.Collect(maps.Keys(c.ReconcileByService)), func(s string) bool { return strings.TrimSpace(s) == "" || c.ReconcileByService[s] == nil }):
		return configError("ReconcileByService", "", "ReconcileByService has a blank service name or a nil function")
	case c.MaxCopyHold < 0:
		return configError("MaxCopyHold", "", "MaxCopyHold is %v, must be >= 0 (0 = DefaultMaxCopyHold, %v)", c.MaxCopyHold, DefaultMaxCopyHold)
	case c.Quarantine < 0:
		return configError("Quarantine", "", "Quarantine is %v, must be >= 0 (0 = the venue's minimum: its lookup false-negative horizon plus MaxCopyHold)", c.Quarantine)
	case c.SettleUnknown < 0:
		return configError("SettleUnknown", "", "SettleUnknown is %v, must be >= 0 (0 = off)", c.SettleUnknown)
	}
	if err := c.validateVenue(); err != nil {
		return err
	}
	if err := c.validateResting(); err != nil { // openorders.go
		return err
	}
	// The engine's own thresholds, checked as New will (with the Probe New
	// installs).
	ecfg := c.Engine
	ecfg.Probe = func(context.Context, engine.Endpoint) error { return nil }
	if err := ecfg.Validate(); err != nil {
		return configError("Engine", "", "Engine: %w", err)
	}
	if err := c.validateAdmission(); err != nil {
		return err
	}
	if err := c.FenceBackoff.validate("FenceBackoff"); err != nil {
		return err
	}
	if err := c.ReconcileBackoff.validate("ReconcileBackoff"); err != nil {
		return err
	}
	if err := c.FailbackBackoff.validate("FailbackBackoff"); err != nil {
		return err
	}
	if len(c.Endpoints) < 2 {
		return configError("Endpoints", "", "%d endpoint(s) configured; need at least two to fail over", len(c.Endpoints))
	}
	if err := validateEndpoints(c.Endpoints, c.AllowPlaintext); err != nil {
		return err
	}
	return c.validateWhole()
}

// validateWhole refuses fields that are each well formed but wrong together:
// a broker-confirmed fence declared over the local fence alone, a service
// some endpoint cannot carry after a switch, a per-service reconciler for a
// service no endpoint has.
func (c Config) validateWhole() error {
	if c.BrokerFencesViaFencer && c.Fencer != nil && reflect.ValueOf(c.Fencer).Pointer() == reflect.ValueOf(LocalFenceOnly).Pointer() {
		return configError("BrokerFencesViaFencer and Fencer", "", "BrokerFencesViaFencer declares that the broker confirms the Fencer's fence, but Fencer is LocalFenceOnly, which only closes this process's connections: "+
			"a NOT_RECEIVED would be made final on a fence the broker never confirmed; set BrokerFencesViaFencer false, or give a Fencer the broker confirms (a kill switch, a fencing token advanced at the broker)")
	}
	// Every service on every endpoint: a switch moves every service together,
	// so a service missing on one endpoint has no address once it is active.
	has := map[string][]string{} // service -> endpoints that have it
	for _, ep := range c.Endpoints {
		for svc := range ep.Services {
			has[svc] = append(has[svc], ep.Name)
		}
	}
	services := slices.Sorted(maps.Keys(has))
	for i, ep := range c.Endpoints {
		for _, svc := range services {
			if _, ok := ep.Services[svc]; !ok {
				return configError(fmt.Sprintf("Endpoints[%d].Services", i), ep.Name, "Endpoints[%d] (%q) has no %q address, which endpoint(s) %s have: a switch moves every service together, so once %q is active %q has nowhere to go; give every endpoint an address for every service",
					i, ep.Name, svc, quoteList(has[svc]), ep.Name, svc)
			}
		}
	}
	for _, key := range slices.Sorted(maps.Keys(c.ReconcileByService)) {
		if _, ok := has[key]; !ok {
			return configError(fmt.Sprintf("ReconcileByService[%q]", key), "", "ReconcileByService names service %q, which no endpoint has (the endpoints' services are %s): its reconciler would never run, and the services it was meant for would be reconciled by Reconcile or refused at Acquire; name one of the endpoints' services",
				key, quoteList(services))
		}
	}
	return nil
}

// quoteList renders names as "a", "b".
func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// validateEndpoints checks what New and the engine would refuse, so Validate
// and New agree: blank Name or Region, a duplicate name, not exactly one
// primary, no service, and each service address (well formed, and for the
// transports' own services the scheme they need: "rest" an http(s) URL, "ws"
// a ws(s) URL, "fix" host:port; a plain http:// or ws:// URL only to a
// loopback host unless allowPlaintext).
func validateEndpoints(eps []Endpoint, allowPlaintext bool) error {
	seen := make(map[string]bool, len(eps))
	primaries := 0
	for i, ep := range eps {
		switch {
		case strings.TrimSpace(ep.Name) == "":
			return configError(fmt.Sprintf("Endpoints[%d].Name", i), "", "Endpoints[%d]: %w: Name is blank", i, engine.ErrBlankField)
		case strings.TrimSpace(ep.Region) == "":
			return configError(fmt.Sprintf("Endpoints[%d].Region", i), ep.Name, "Endpoints[%d] (%q): %w: Region is blank", i, ep.Name, engine.ErrBlankField)
		case seen[ep.Name]:
			return configError(fmt.Sprintf("Endpoints[%d].Name", i), ep.Name, "Endpoints[%d]: %w: %q", i, engine.ErrDuplicateEndpoint, ep.Name)
		case len(ep.Services) == 0:
			return configError(fmt.Sprintf("Endpoints[%d].Services", i), ep.Name, "Endpoints[%d] (%q) has no service addresses", i, ep.Name)
		}
		seen[ep.Name] = true
		if ep.Primary {
			primaries++
			if primaries > 1 {
				return configError(fmt.Sprintf("Endpoints[%d].Primary", i), ep.Name, "Endpoints[%d] (%q): %w: only one endpoint may be Primary", i, ep.Name, engine.ErrSecondPrimary)
			}
		}
		for svc, addr := range ep.Services {
			if strings.TrimSpace(svc) == "" {
				return configError(fmt.Sprintf("Endpoints[%d].Services", i), ep.Name, "Endpoints[%d] (%q) has a blank service name", i, ep.Name)
			}
			if err := checkServiceAddress(svc, addr); err != nil {
				return configError(fmt.Sprintf("Endpoints[%d].Services[%q]", i, svc), ep.Name, "Endpoints[%d] (%q) service %q: %w", i, ep.Name, svc, err)
			}
			if svc == ServiceREST && !allowPlaintext && plaintextRemote(addr, "http") {
				return configError(fmt.Sprintf("Endpoints[%d].Services[%q]", i, svc), ep.Name, "Endpoints[%d] (%q) service %q: a plain http:// address to a host that is not loopback sends orders and credentials in the clear: use https://, or set Config.AllowPlaintext", i, ep.Name, svc)
			}
			if svc == ServiceWS && !allowPlaintext && plaintextRemote(addr, "ws") {
				return configError(fmt.Sprintf("Endpoints[%d].Services[%q]", i, svc), ep.Name, "Endpoints[%d] (%q) service %q: a plain ws:// address to a host that is not loopback sends the handshake's credentials and every message in the clear: use wss://, or set Config.AllowPlaintext", i, ep.Name, svc)
			}
		}
	}
	if primaries == 0 && len(eps) > 0 {
		return configError("Endpoints[].Primary", "", "Endpoints: no endpoint is Primary (mark exactly one): %w", engine.ErrNoPrimary)
	}
	return nil
}

// plaintextRemote reports whether addr is a URL with one of the plaintext
// schemes whose host is not loopback.
func plaintextRemote(addr string, schemes ...string) bool {
	u, err := url.Parse(addr)
	if err != nil || !slices.ContainsFunc(schemes, func(s string) bool { return strings.EqualFold(u.Scheme, s) }) {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return false
	}
	ip := net.ParseIP(host)
	return ip == nil || !ip.IsLoopback()
}

// checkServiceAddress never repeats the address (it may carry credentials).
func checkServiceAddress(svc, addr string) error {
	if _, err := hostPort(addr); err != nil {
		return err
	}
	isURL := strings.Contains(addr, "://")
	scheme := ""
	if isURL {
		scheme = strings.ToLower(addr[:strings.Index(addr, "://")])
		// Credentials in a URL end up in logs, errors and proxies' records;
		// they belong in headers (or the transport's options). Never echo them.
		if u, err := url.Parse(addr); err == nil && u.User != nil {
			return fmt.Errorf("a %q address must not carry credentials (user:password@): put them in a header or the transport's options", svc)
		}
	}
	switch svc {
	case ServiceREST:
		if scheme != "http" && scheme != "https" {
			return errors.New("a \"rest\" address must be an http:// or https:// URL")
		}
	case ServiceWS:
		if scheme != "ws" && scheme != "wss" {
			return errors.New("a \"ws\" address must be a ws:// or wss:// URL (an http(s):// URL there is most often the REST address, which answers no WebSocket handshake: write the stream's wss:// URL)")
		}
	case ServiceFIX:
		if isURL {
			return errors.New("a \"fix\" address must be host:port, not a URL")
		}
	}
	return nil
}
