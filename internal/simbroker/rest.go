package simbroker

import (
	"bytes"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/brokerpath/brokerpath/internal/faultnet"
	"io"
	"net/http"
	"strconv"
	"time"
)

const msgUnauthorized = "unauthorized: missing or invalid X-API-Key"

// authorized reports whether r carries the broker's API key. The key is
// compared in constant time and never echoed.
func (b *Broker) authorized(r *http.Request) bool {
	got := r.Header.Get("X-API-Key")
	if got == "" && r.Header.Get("APCA-API-KEY-ID") != "" {
		got = r.Header.Get("APCA-API-SECRET-KEY") // Alpaca's headers (see alpacaRoutes)
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(b.apiKey)) == 1
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

// decString is a decimal that may be sent as a JSON number or string.
type decString string

func (d *decString) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*d = decString(s)
		return nil
	}
	if string(b) == "null" {
		*d = ""
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*d = decString(n.String())
	return nil
}

// placeBody is the POST /v1/orders request body.
type placeBody struct {
	ClientOrderID string    `json:"client_order_id"`
	Symbol        string    `json:"symbol"`
	Side          string    `json:"side"`
	Qty           decString `json:"qty"`
	Type          string    `json:"type"`
	Price         decString `json:"price"`
}

func (rg *Region) restHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /status", rg.handleStatus)
	mux.Handle("GET /v1/account", rg.guard(http.HandlerFunc(rg.handleAccount)))
	mux.Handle("POST /v1/orders", rg.guard(http.HandlerFunc(rg.handlePlace)))
	mux.Handle("GET /v1/orders", rg.guard(http.HandlerFunc(rg.handleList)))
	mux.Handle("GET /v1/orders/{id}", rg.guard(http.HandlerFunc(rg.handleGet)))
	mux.Handle("DELETE /v1/orders/{id}", rg.guard(http.HandlerFunc(rg.handleCancel)))
	mux.Handle("GET /v1/account/fence", rg.guard(http.HandlerFunc(rg.handleFenceState)))
	mux.Handle("POST /v1/account/fence", rg.guard(rg.fenceHandler(true)))
	mux.Handle("POST /v1/account/unfence", rg.guard(rg.fenceHandler(false)))
	rg.restingRoutes(mux)
	rg.alpacaRoutes(mux)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Region", rg.name)
		mux.ServeHTTP(w, r)
	})
}

// source tells which relay (rest or probe) and connection a request came through.
func (rg *Region) source(r *http.Request) (Service, string) {
	s, src := rg.sourceOf(r)
	return s, src.connID
}

// sourceOf is source with the network's facts about the connection: from
// the relay, or from the accepted connection itself when it keeps a record
// (faultnet.Traced: an in-memory network's listener).
func (rg *Region) sourceOf(r *http.Request) (Service, source) {
	if s, src, ok := rg.lookupSource(r.RemoteAddr, REST, Probe); ok {
		return s, src
	}
	src := source{connID: "direct:" + r.RemoteAddr}
	if t, ok := r.Context().Value(netConnKey{}).(faultnet.Traced); ok {
		src.opened, _, src.sentBy = t.NetProgress()
		src.sentAfter = src.sentBy // in memory the write time is exact
	}
	return REST, src
}

// netConnKey keys the accepted net.Conn in a request's context.
type netConnKey struct{}

// guard authenticates /v1 requests and applies a Fault503 burst.
func (rg *Region) guard(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rg.b.authorized(r) {
			writeError(w, http.StatusUnauthorized, msgUnauthorized)
			return
		}
		if ok, ra := rg.app.take503(REST, time.Now()); ok {
			if r.Method == http.MethodPost {
				svc, id := rg.source(r)
				var body placeBody
				_ = json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&body)
				rg.b.audit.add(Record{Kind: KindOrder, Region: rg.name, Service: string(svc), ConnID: id,
					ClientOrderID: body.ClientOrderID, Token: parseToken(r.Header.Get(TokenHeader)).value,
					Outcome: OutcomeUnavailable, Detail: "503 burst"})
			}
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(ra)))
			writeError(w, http.StatusServiceUnavailable, "service unavailable")
			return
		}
		h.ServeHTTP(w, r)
	})
}

func (rg *Region) handleStatus(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "region": rg.name, "time": time.Now().UTC()})
}

func (rg *Region) handleAccount(w http.ResponseWriter, _ *http.Request) {
	c := rg.b.cfg
	ents := c.Entitlements
	if ents == nil {
		ents = []string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"account_id": c.AccountID, "entity": c.Entity, "entitlements": ents, "region": rg.name,
	})
}

func (rg *Region) handlePlace(w http.ResponseWriter, r *http.Request) {
	svc, src := rg.sourceOf(r)
	id := src.connID
	tok := parseToken(r.Header.Get(TokenHeader))
	var body placeBody
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&body); err != nil {
		rg.b.audit.add(Record{Kind: KindOrder, Region: rg.name, Service: string(svc), ConnID: id,
			Outcome: OutcomeRejected, Detail: "bad JSON body"})
		writeError(w, http.StatusBadRequest, "body must be a JSON order object")
		return
	}
	if rg.app.isPartial(REST) {
		rg.b.audit.add(Record{Kind: KindOrder, Region: rg.name, Service: string(svc), ConnID: id,
			ClientOrderID: body.ClientOrderID, Token: tok.value, Outcome: OutcomeUnavailable, Detail: "partial: order path broken"})
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "order entry unavailable")
		return
	}
	req := orderRequest{
		ClientOrderID: body.ClientOrderID, Symbol: body.Symbol, Side: body.Side,
		Type: body.Type, Qty: string(body.Qty), Price: string(body.Price),
	}
	if d := rg.app.bookingDelay(REST); d > 0 {
		// Still booking: a reset of the connection meanwhile does not stop it.
		time.Sleep(d)
	}
	o, out, cut, err := rg.b.placeOrder(rg, svc, src, req, false, tok)
	switch {
	case err != nil:
		writeReject(w, out, err)
	case cut:
		cutHTTP(w, r)
	case out == OutcomeDuplicate:
		writeJSON(w, http.StatusOK, o)
	default:
		writeJSON(w, http.StatusCreated, o)
	}
}

// cutHTTP drops the answer: HTTP/1 hijacks and closes the connection;
// HTTP/2 aborts the handler, which resets the stream (RST_STREAM).
func cutHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
	}
	panic(http.ErrAbortHandler)
}

func (rg *Region) handleGet(w http.ResponseWriter, r *http.Request) {
	if rg.throttleREST(w, r) {
		return
	}
	svc, src := rg.sourceOf(r)
	o, ok := rg.b.lookupOrder(rg, svc, src, r.PathValue("id"))
	if !ok {
		writeError(w, http.StatusNotFound, "order not found")
		return
	}
	writeJSON(w, http.StatusOK, o)
}

func (rg *Region) handleList(w http.ResponseWriter, r *http.Request) {
	var open bool
	switch r.URL.Query().Get("status") {
	case "", "all":
	case "open":
		open = true
	default:
		writeError(w, http.StatusBadRequest, "status must be open or all")
		return
	}
	if rg.throttleREST(w, r) {
		return
	}
	svc, src := rg.sourceOf(r)
	writeJSON(w, http.StatusOK, map[string]any{"orders": rg.b.listOrders(rg, svc, src, open)}) // listing.go
}

func (rg *Region) handleCancel(w http.ResponseWriter, r *http.Request) {
	svc, id := rg.source(r)
	coid := r.PathValue("id")
	rec := Record{Kind: KindCancel, Region: rg.name, Service: string(svc), ConnID: id, ClientOrderID: coid}
	if rg.app.isPartial(REST) {
		rec.Outcome, rec.Detail = OutcomeFailed, "partial: order path broken"
		rg.b.audit.add(rec)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "order entry unavailable")
		return
	}
	if err := rg.b.cancelAllowed(rg); err != nil {
		rec.Outcome, rec.Detail = OutcomeFailed, err.Error()
		rg.b.audit.add(rec)
		writeJSON(w, http.StatusForbidden, map[string]string{"error": err.Error(), "code": "region_fenced"})
		return
	}
	o, err := rg.b.book.cancel(coid, time.Now())
	switch {
	case errors.Is(err, errUnknownOrder):
		rec.Outcome, rec.Detail = OutcomeFailed, "unknown order"
		rg.b.audit.add(rec)
		writeError(w, http.StatusNotFound, "order not found")
	case errors.Is(err, errNotOpen):
		rec.Outcome, rec.Detail = OutcomeFailed, "order is "+o.Status
		rg.b.audit.add(rec)
		writeJSON(w, http.StatusConflict, map[string]any{"error": "order is not open", "order": o})
	default:
		rec.Outcome = OutcomeOK
		rg.b.audit.add(rec)
		writeJSON(w, http.StatusOK, o)
	}
}

// writeReject answers an order that booked nothing: 403 region_fenced, 409
// stale_token, 428 missing_token, else 400 (invalid order or token).
func writeReject(w http.ResponseWriter, out Outcome, err error) {
	code, status := "invalid_order", http.StatusBadRequest
	switch out {
	case OutcomeFenced:
		code, status = "region_fenced", http.StatusForbidden
	case OutcomeStaleToken:
		code, status = "stale_token", http.StatusConflict
	case OutcomeMissingToken:
		code, status = "missing_token", http.StatusPreconditionRequired
	default:
		if errors.Is(err, errBadToken) {
			code = "invalid_token"
		}
	}
	writeJSON(w, status, map[string]string{"error": err.Error(), "code": code})
}

// fenceBody is the body of POST /v1/account/fence and /v1/account/unfence.
type fenceBody struct {
	Region string `json:"region"`
}

// fenceHandler serves the kill switch: fence (on) or unfence a region for
// the account, through any region. A TokenHeader on the request also raises
// the account's highest token (TokensChecked), so a new leader can fence
// the old path and retire its token in one call.
func (rg *Region) fenceHandler(on bool) http.Handler {
	verb := "unfence"
	if on {
		verb = "fence"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body fenceBody
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&body); err != nil || body.Region == "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": `body must be {"region":"<name>"}`, "code": "invalid_request"})
			return
		}
		var raised uint64
		if h := r.Header.Get(TokenHeader); h != "" && rg.b.cfg.Tokens == TokensChecked {
			tok := parseToken(h)
			if tok.raw != "" {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("%s %q: want a non-negative integer", TokenHeader, tok.raw), "code": "invalid_token"})
				return
			}
			var err error
			if raised, err = rg.b.raiseToken(tok.value, "rest "+verb+" through "+rg.name); err != nil {
				writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error(), "code": "invalid_token"})
				return
			}
		}
		since, err := rg.b.setFence(body.Region, on, "rest "+verb+" through "+rg.name)
		switch {
		case errors.Is(err, ErrFenceNotOffered):
			writeJSON(w, http.StatusNotImplemented, map[string]string{"error": "this broker offers no fence (fence policy none)", "code": "fence_not_offered"})
			return
		case errors.Is(err, ErrUnknownRegion):
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": fmt.Sprintf("unknown region %q", body.Region), "code": "unknown_region"})
			return
		case err != nil:
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": err.Error(), "code": "unavailable"})
			return
		}
		out := map[string]any{"region": body.Region, "fenced": on}
		if on {
			out["since"] = since.UTC()
		}
		if raised > 0 {
			out["highest_token"] = raised
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// handleFenceState answers GET /v1/account/fence: the policies, the fenced
// regions and the highest token.
func (rg *Region) handleFenceState(w http.ResponseWriter, _ *http.Request) {
	fenced := map[string]time.Time{}
	for r, t := range rg.b.FencedRegions() {
		fenced[r] = t.UTC()
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"fence": rg.b.cfg.Fence.String(), "tokens": rg.b.cfg.Tokens.String(), "dedup": rg.b.cfg.Dedup.String(),
		"fenced": fenced, "highest_token": rg.b.HighestToken(),
	})
}

// alpacaRoutes serve the same book under the paths of Alpaca's Trading API
// that a program written for Alpaca needs on a healthy path
// (https://docs.alpaca.markets/reference/orders): GET /v2/account, POST
// /v2/orders, and the lookup GET /v2/orders:by_client_order_id?client_order_id=…
// (rest.AlpacaOrderLookup). They authenticate with Alpaca's headers,
// APCA-API-KEY-ID (any) and APCA-API-SECRET-KEY (the API key).
func (rg *Region) alpacaRoutes(mux *http.ServeMux) {
	mux.Handle("GET /v2/account", rg.guard(http.HandlerFunc(rg.handleAccount)))
	mux.Handle("POST /v2/orders", rg.guard(http.HandlerFunc(rg.handlePlace)))
	mux.Handle("GET /v2/orders:by_client_order_id", rg.guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("client_order_id")
		if id == "" {
			writeError(w, http.StatusUnprocessableEntity, "client_order_id is required")
			return
		}
		r.SetPathValue("id", id)
		rg.handleGet(w, r)
	})))
}
