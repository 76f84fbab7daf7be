package etcdcoord

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/engine"
)

// Observation is one observer's opinion of one endpoint, as published. The
// observer counts its own evidence (its engine's FailureThreshold, MaxHealthAge,
// on its own monotonic clock) and publishes the conclusions, so no two hosts'
// clocks are ever compared.
type Observation struct {
	Observer string             `json:"observer"`
	Region   string             `json:"region"`
	Endpoint string             `json:"endpoint"`
	State    engine.HealthState `json:"state"`
	// Fresh: Healthy with a success younger than the observer's MaxHealthAge.
	Fresh bool `json:"fresh"`
	// Stale: the observer has recorded no result for this endpoint within its
	// MaxHealthAge (its probe loop stalled). A stale opinion counts for nothing.
	Stale                bool          `json:"stale"`
	ConsecutiveFailures  int           `json:"consecutive_failures"`
	ConsecutiveSuccesses int           `json:"consecutive_successes"`
	Latency              time.Duration `json:"latency"`
	LastError            string        `json:"last_error,omitempty"`
	// Round counts the observer's publications (for humans and drills).
	Round uint64 `json:"round"`
	// Identity is the observer's verdict on who the endpoint fronts:
	// IdentityVerified (its last conclusive check, within its IdentityMaxAge,
	// matched), IdentityMismatch (it fronts another account), or "" (never
	// checked, inconclusive, or expired). IdentityError is its last check's
	// error.
	Identity      string `json:"identity,omitempty"`
	IdentityError string `json:"identity_error,omitempty"`
	// Jurisdiction of the endpoint as the observer is configured.
	Jurisdiction string `json:"jurisdiction,omitempty"`
}

// Identity verdicts in Observation.Identity and Verdict.Identity.
const (
	IdentityVerified = "VERIFIED"
	IdentityMismatch = "MISMATCH"
	// IdentityUnproven (Verdict only): fewer than Quorum live observers
	// verified it, and none found a mismatch.
	IdentityUnproven = "UNPROVEN"
)

// VerdictState is the quorum's conclusion about one endpoint.
type VerdictState int

const (
	// VerdictNoQuorum: fewer than Quorum live observers have a current opinion.
	// Not evidence of anything.
	VerdictNoQuorum VerdictState = iota
	// VerdictHealthy: at least Quorum live observers see it Healthy and fresh:
	// it may be a failover target.
	VerdictHealthy
	// VerdictDown: at least Quorum live observers say it is Down.
	VerdictDown
	// VerdictDisputed: enough observers, but neither Down nor fresh-Healthy
	// reaches Quorum (a partition between some observers and the endpoint,
	// or Degraded reports). Neither a reason to fail over nor a target.
	VerdictDisputed
)

var verdictNames = [...]string{"NO_QUORUM", "HEALTHY", "DOWN", "DISPUTED"}

// String returns the upper-case name.
func (v VerdictState) String() string {
	if v >= 0 && int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("VerdictState(%d)", int(v))
}

// MarshalText renders the state as its String form.
func (v VerdictState) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// Verdict is the aggregated view of one endpoint.
type Verdict struct {
	Endpoint string       `json:"endpoint"`
	State    VerdictState `json:"state"`
	// Live counts the observers with a current (non-stale) opinion; Down and
	// Healthy those saying Down and fresh-Healthy.
	Live    int `json:"live"`
	Down    int `json:"down"`
	Healthy int `json:"healthy"`
	// Latency is the median latency reported by the fresh-Healthy observers.
	Latency time.Duration `json:"latency"`
	// DownBy and HealthyBy name the observers (sorted).
	DownBy    []string `json:"down_by,omitempty"`
	HealthyBy []string `json:"healthy_by,omitempty"`
	// Identity: IdentityMismatch when any live observer found the endpoint
	// fronting another account (one proof is enough to keep it out);
	// otherwise IdentityVerified when at least Quorum live observers verified
	// it; otherwise IdentityUnproven. VerifiedBy and MismatchBy name them;
	// IdentityError is one mismatch's detail.
	Identity      string   `json:"identity"`
	VerifiedBy    []string `json:"verified_by,omitempty"`
	MismatchBy    []string `json:"mismatch_by,omitempty"`
	IdentityError string   `json:"identity_error,omitempty"`
}

// Aggregate turns the live observations (those whose lease has not expired)
// into one verdict per endpoint named in them. It is pure: the same input gives
// the same output. An observer's opinion counts once per endpoint (a duplicate
// keeps the last one given). quorum must be >= 1; a majority of the observers
// you run is the sensible choice, and with quorum at most half of them an
// endpoint can reach both Down and Healthy, which is reported as Disputed.
func Aggregate(obs []Observation, quorum int) map[string]Verdict {
	if quorum < 1 {
		quorum = 1
	}
	type key struct{ ep, obs string }
	last := make(map[key]Observation, len(obs))
	for _, o := range obs {
		last[key{o.Endpoint, o.Observer}] = o
	}
	byEP := make(map[string][]Observation)
	for k, o := range last {
		byEP[k.ep] = append(byEP[k.ep], o)
	}
	out := make(map[string]Verdict, len(byEP))
	for ep, list := range byEP {
		v := Verdict{Endpoint: ep}
		var lat []time.Duration
		for _, o := range list {
			if o.Stale {
				continue
			}
			v.Live++
			switch {
			case o.State == engine.Down:
				v.Down++
				v.DownBy = append(v.DownBy, o.Observer)
			case o.State == engine.Healthy && o.Fresh:
				v.Healthy++
				v.HealthyBy = append(v.HealthyBy, o.Observer)
				lat = append(lat, o.Latency)
			}
			switch o.Identity {
			case IdentityVerified:
				v.VerifiedBy = append(v.VerifiedBy, o.Observer)
			case IdentityMismatch:
				v.MismatchBy = append(v.MismatchBy, o.Observer)
				if v.IdentityError == "" || o.Observer < v.MismatchBy[0] {
					v.IdentityError = o.IdentityError
				}
			}
		}
		sort.Strings(v.DownBy)
		sort.Strings(v.HealthyBy)
		sort.Strings(v.VerifiedBy)
		sort.Strings(v.MismatchBy)
		switch {
		case len(v.MismatchBy) > 0:
			v.Identity = IdentityMismatch
		case len(v.VerifiedBy) >= quorum:
			v.Identity = IdentityVerified
		default:
			v.Identity = IdentityUnproven
		}
		if len(lat) > 0 {
			slices.Sort(lat)
			v.Latency = lat[len(lat)/2]
		}
		down, healthy := v.Down >= quorum, v.Healthy >= quorum
		switch {
		case v.Live < quorum:
			v.State = VerdictNoQuorum
		case down && healthy:
			v.State = VerdictDisputed
		case down:
			v.State = VerdictDown
		case healthy:
			v.State = VerdictHealthy
		default:
			v.State = VerdictDisputed
		}
		out[ep] = v
	}
	return out
}

// UnmarshalJSON reads an Observation as published (the state by name: the
// engine's HealthState marshals as text but does not parse it back).
func (o *Observation) UnmarshalJSON(b []byte) error {
	type plain Observation
	var aux struct {
		plain
		State string `json:"state"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*o = Observation(aux.plain)
	for s := engine.Unknown; s <= engine.Down; s++ {
		if s.String() == aux.State {
			o.State = s
			return nil
		}
	}
	return fmt.Errorf("etcdcoord: observation has unknown state %q", aux.State)
}

// decodeObservation decodes and checks the observation record at key (under
// keys.Observations()): the body must parse, name the observer and endpoint
// its key names, and stay within the record bounds. Every error wraps
// ErrBadRecord.
func decodeObservation(keys keyLayout, key string, b []byte) (Observation, error) {
	rest, ok := strings.CutPrefix(key, keys.Observations())
	obsName, epName, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		return Observation{}, fmt.Errorf("%w: observation key %s is not <prefix>observations/<observer>/<endpoint>", ErrBadRecord, excerpt(key))
	}
	if len(b) > maxRecordBytes {
		return Observation{}, fmt.Errorf("%w: observation is %d bytes, above the %d-byte limit", ErrBadRecord, len(b), maxRecordBytes)
	}
	var o Observation
	if err := json.Unmarshal(b, &o); err != nil {
		return Observation{}, fmt.Errorf("%w: decode observation: %w", ErrBadRecord, err)
	}
	if err := recordName("observer", o.Observer); err != nil {
		return Observation{}, fmt.Errorf("%w: observation: %w", ErrBadRecord, err)
	}
	if err := recordName("endpoint", o.Endpoint); err != nil {
		return Observation{}, fmt.Errorf("%w: observation: %w", ErrBadRecord, err)
	}
	if o.Observer != obsName || o.Endpoint != epName {
		return Observation{}, fmt.Errorf("%w: observation under observer %s, endpoint %s names observer %s, endpoint %s",
			ErrBadRecord, excerpt(obsName), excerpt(epName), excerpt(o.Observer), excerpt(o.Endpoint))
	}
	switch o.Identity {
	case "", IdentityVerified, IdentityMismatch:
	default:
		return Observation{}, fmt.Errorf("%w: observation has unknown identity verdict %s", ErrBadRecord, excerpt(o.Identity))
	}
	if o.Latency < 0 || o.ConsecutiveFailures < 0 || o.ConsecutiveSuccesses < 0 {
		return Observation{}, fmt.Errorf("%w: observation has a negative latency or count", ErrBadRecord)
	}
	return o, nil
}
