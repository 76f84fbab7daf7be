package status

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/fix"
	"github.com/brokerpath/brokerpath/transports/rest"
	"github.com/brokerpath/brokerpath/transports/ws"
)

// Options configures Handler. The zero value works; every source is optional
// and adds its part of the page.
type Options struct {
	// Title heads the page; default "brokerpath".
	Title string
	// Refresh, when > 0, makes the HTML page reload itself this often.
	Refresh time.Duration
	// MaxEvents bounds the events shown (most recent first); default 50.
	MaxEvents int
	// ShowOrderIDs shows client order IDs: those of reconciliation events in
	// the JSON, and those of the provisional NOT_RECEIVED verdicts on the page
	// and in the JSON. Off by default: the page then says "(hidden)" and
	// names this option.
	ShowOrderIDs bool
	// Recorder supplies each switch's timings (time to detect, to switch,
	// held and why) and what reconciliation settled per transport. Without it
	// the page shows only what the Path's Snapshot holds.
	Recorder *Recorder
	// REST, FIX and Stream supply the order counts per transport and the
	// stream's reconnects (*rest.Transport, *fix.Initiator, *ws.Stream).
	REST   interface{ Stats() *rest.Stats }
	FIX    interface{ Stats() *fix.Stats }
	Stream interface{ Stats() ws.Stats }
	// Ticks supplies the stream's ticks missed and longest silence.
	Ticks *Ticks
	// JSONURL is the page's link to its JSON; default "status.json"
	// (relative to the page).
	JSONURL string
	// MetricsURL, when set, is linked from the page (e.g. "/metrics").
	MetricsURL string
}

// Handler returns an http.Handler serving path's status as HTML or JSON (see the
// package documentation). It is safe for concurrent use; every request takes
// a fresh Snapshot.
func Handler(path *pathdialer.Path, opts Options) http.Handler {
	if opts.Title == "" {
		opts.Title = "brokerpath"
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 50
	}
	if opts.JSONURL == "" {
		opts.JSONURL = "status.json"
	}
	return &handler{path: path, opts: opts}
}

type handler struct {
	path *pathdialer.Path
	opts Options
}

var _ http.Handler = (*handler)(nil)

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	rep := h.report()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_ = page.Execute(w, newView(h.opts, rep, h.path.Engine().Config().MaxHealthAge))
}

// wantsJSON: /status.json, ?format=json, or an Accept header that names JSON
// before (or without) HTML.
func wantsJSON(r *http.Request) bool {
	if strings.HasSuffix(r.URL.Path, ".json") || r.URL.Query().Get("format") == "json" {
		return true
	}
	accept := r.Header.Get("Accept")
	j := strings.Index(accept, "application/json")
	if j < 0 {
		return false
	}
	h := strings.Index(accept, "text/html")
	return h < 0 || j < h
}

// report takes the Path's Snapshot, keeps the last MaxEvents events and
// builds the report.
func (h *handler) report() report {
	s := h.path.Snapshot()
	if len(s.Events) > h.opts.MaxEvents {
		s.Events = s.Events[len(s.Events)-h.opts.MaxEvents:]
	}
	return build(sources{snap: s, unknown: h.path.Unknown(), engine: h.path.Engine().Config(), opts: h.opts, rec: h.opts.Recorder})
}
