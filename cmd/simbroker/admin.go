package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// newAdmin returns the admin HTTP handler: fault switches, audit, book,
// stats, manual ticks and replication lag.
func newAdmin(b *simbroker.Broker) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /fault", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		region, kind := q.Get("region"), q.Get("kind")
		if kind == "partition" {
			if err := b.PartitionMonitor(region); err != nil {
				adminError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]string{"region": region, "service": "probe", "fault": "blackhole (monitor-only partition)"})
			return
		}
		svc, err := simbroker.ParseService(q.Get("service"))
		if err != nil {
			adminError(w, err)
			return
		}
		f, err := parseFault(kind, q)
		if err != nil {
			adminError(w, err)
			return
		}
		if err := b.SetFault(region, svc, f); err != nil {
			adminError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"region": region, "service": string(svc), "fault": f.String()})
	})
	mux.HandleFunc("GET /faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, b.Faults())
	})
	mux.HandleFunc("GET /audit", func(w http.ResponseWriter, _ *http.Request) {
		log := b.Audit()
		booked := map[string]int{}
		for _, r := range log.Booked() {
			booked[r.Region]++
		}
		dups := log.Duplicates()
		if dups == nil {
			dups = []string{}
		}
		records := []simbroker.Record(log)
		if records == nil {
			records = []simbroker.Record{}
		}
		spans := log.FenceSpans()
		if spans == nil {
			spans = []simbroker.FenceSpan{}
		}
		rejected := map[simbroker.Outcome]int{}
		for _, r := range log.Rejected() {
			rejected[r.Outcome]++
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"records": records, "booked_by_region": booked, "duplicates": dups, "submissions": log.Submissions(),
			"fence_spans": spans, "rejected": rejected, "highest_token": b.HighestToken(),
			"policies": b.Config().Policies(),
		})
	})
	fence := func(on bool) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			region := r.URL.Query().Get("region")
			var err error
			if on {
				err = b.FenceRegion(region)
			} else {
				err = b.UnfenceRegion(region)
			}
			if err != nil {
				adminError(w, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"region": region, "fenced": on, "fenced_regions": b.FencedRegions()})
		}
	}
	mux.HandleFunc("POST /fence", fence(true))
	mux.HandleFunc("POST /unfence", fence(false))
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		v, err := strconv.ParseUint(r.URL.Query().Get("value"), 10, 64)
		if err != nil {
			adminError(w, fmt.Errorf("%w: value: want a positive integer", errBadParam))
			return
		}
		if err := b.RaiseToken(v); err != nil {
			adminError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"highest_token": b.HighestToken()})
	})
	mux.HandleFunc("GET /book", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"orders": b.Book()})
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		out := map[string]any{}
		for _, rg := range b.Regions() {
			out[rg.Name()] = map[string]any{"ws": rg.WSStats(), "rest_relay": rg.Relay(simbroker.REST).Stats(),
				"probe_relay": rg.Relay(simbroker.Probe).Stats(), "ws_relay": rg.Relay(simbroker.WS).Stats(), "fix_relay": rg.Relay(simbroker.FIX).Stats()}
		}
		writeJSON(w, http.StatusOK, out)
	})
	mux.HandleFunc("GET /endpoints", func(w http.ResponseWriter, _ *http.Request) {
		regions := map[string]any{}
		for _, rg := range b.Regions() {
			regions[rg.Name()] = map[string]string{"rest": rg.RESTURL(), "probe": rg.ProbeURL(), "ws": rg.WSURL(), "fix": rg.FIXAddr()}
		}
		sid := b.FIXSessionID()
		writeJSON(w, http.StatusOK, map[string]any{
			"regions": regions, "ca_file": b.CAFile(),
			"fix": map[string]string{"begin_string": sid.BeginString, "sender_comp_id": sid.SenderCompID, "target_comp_id": sid.TargetCompID},
		})
	})
	mux.HandleFunc("POST /tick", func(w http.ResponseWriter, r *http.Request) {
		t, err := b.PublishTick(r.URL.Query().Get("stream"))
		if err != nil {
			adminError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, t)
	})
	mux.HandleFunc("POST /lag", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		d, err := time.ParseDuration(q.Get("lag"))
		if err != nil {
			adminError(w, fmt.Errorf("%w: lag: %v", errBadParam, err))
			return
		}
		if err := b.SetReplicationLag(q.Get("region"), d); err != nil {
			adminError(w, err)
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"region": q.Get("region"), "lag": d.String()})
	})
	return mux
}

var errBadParam = errors.New("bad parameter")

// parseFault builds a fault from an admin request's kind and parameters.
func parseFault(kind string, q url.Values) (simbroker.Fault, error) {
	dur := func(name string, def time.Duration) (time.Duration, error) {
		v := q.Get(name)
		if v == "" {
			return def, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %v", errBadParam, name, err)
		}
		return d, nil
	}
	num := func(name string, def int) (int, error) {
		v := q.Get(name)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %v", errBadParam, name, err)
		}
		return n, nil
	}
	switch kind {
	case "none":
		return simbroker.None{}, nil
	case "down":
		return simbroker.Down{}, nil
	case "blackhole":
		return simbroker.Blackhole{}, nil
	case "reset":
		return simbroker.Reset{}, nil
	case "partial":
		return simbroker.Partial{}, nil
	case "latency":
		delay, err := dur("delay", 200*time.Millisecond)
		if err != nil {
			return nil, err
		}
		jitter, err := dur("jitter", 0)
		if err != nil {
			return nil, err
		}
		return simbroker.Latency{Delay: delay, Jitter: jitter}, nil
	case "503":
		n, err := num("n", 0)
		if err != nil {
			return nil, err
		}
		forD, err := dur("for", 0)
		if err != nil {
			return nil, err
		}
		ra, err := dur("retry_after", time.Second)
		if err != nil {
			return nil, err
		}
		f := simbroker.Fault503{N: n, RetryAfter: ra}
		if forD > 0 {
			f.Until = time.Now().Add(forD)
		}
		if f.N == 0 && f.Until.IsZero() {
			f.N = 10
		}
		return f, nil
	case "unknown":
		n, err := num("n", 1)
		if err != nil {
			return nil, err
		}
		return simbroker.UnknownOutcome{N: n}, nil
	case "flap":
		period, err := dur("period", 2*time.Second)
		if err != nil {
			return nil, err
		}
		var inner simbroker.Fault = simbroker.Down{}
		if name := q.Get("fault"); name != "" {
			if inner, err = parseFault(name, q); err != nil {
				return nil, err
			}
		}
		return simbroker.Flap{Period: period, Fault: inner}, nil
	}
	return nil, fmt.Errorf("%w: kind %q (want none, down, blackhole, latency, reset, 503, partial, unknown, flap, partition)", errBadParam, kind)
}

func adminError(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	switch {
	case errors.Is(err, simbroker.ErrClosed):
		code = http.StatusServiceUnavailable
	case errors.Is(err, simbroker.ErrFenceNotOffered):
		code = http.StatusNotImplemented
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
