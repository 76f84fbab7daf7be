package status

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// Options configures Handler. The zero value works.
type Options struct {
	// Title heads the page; default "brokerpath".
	Title string
	// Refresh, when > 0, makes the HTML page reload itself this often.
	Refresh time.Duration
	// MaxEvents bounds the events shown (most recent first); default 50.
	MaxEvents int
	// ShowOrderIDs keeps the tickets and settlements (client order IDs) of
	// reconciliation events in the output. Off by default.
	ShowOrderIDs bool
}

// Handler returns an http.Handler serving path's status as HTML or JSON (see the
// package documentation). It is safe for concurrent use and holds no state of
// its own: every request takes a fresh Snapshot.
func Handler(path *pathdialer.Path, opts Options) http.Handler {
	if opts.Title == "" {
		opts.Title = "brokerpath"
	}
	if opts.MaxEvents <= 0 {
		opts.MaxEvents = 50
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
	s, texts := h.snapshot()
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if wantsJSON(r) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
	_ = page.Execute(w, newView(h.opts, s, h.path.Engine().Config().MaxHealthAge, texts))
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

// snapshot takes the Path's Snapshot, keeps the last MaxEvents events, renders
// each on one line (tickets as a count) and strips the ticket and settlement
// lists unless asked not to.
func (h *handler) snapshot() (pathdialer.Snapshot, []string) {
	s := h.path.Snapshot()
	if len(s.Events) > h.opts.MaxEvents {
		s.Events = s.Events[len(s.Events)-h.opts.MaxEvents:]
	}
	s.Events = slices.Clone(s.Events)
	texts := make([]string, len(s.Events))
	for i, e := range s.Events {
		texts[i] = e.String()
		if len(e.Settlements) > 0 {
			texts[i] += fmt.Sprintf(" (settled %d)", len(e.Settlements))
		}
		if !h.opts.ShowOrderIDs {
			s.Events[i].Tickets, s.Events[i].Settlements = nil, nil
		}
	}
	return s, texts
}
