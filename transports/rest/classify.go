package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"path"
	"reflect"
	"strings"
	"unsafe"
)

// kindKey is the context key of a request's kind, set by WithSubmission or
// WithReconcile; its value is a reqKind.
type kindKey struct{}

// reqKind is what RoundTrip does with a request.
type reqKind uint8

const (
	kindRead       reqKind = iota + 1 // through the read breaker
	kindSubmission                    // takes a ticket from the gate
	kindReconcile                     // a read that bypasses the read breaker
)

// WithSubmission marks the requests made with ctx as submissions (true) or reads
// (false), overriding Options.Rules and the method. A submission that matches
// a rule in Rules.Orders is still identified as that rule says (Rule.OrderID).
func WithSubmission(ctx context.Context, submission bool) context.Context {
	k := kindRead
	if submission {
		k = kindSubmission
	}
	return context.WithValue(ctx, kindKey{}, k)
}

// WithReconcile marks the requests made with ctx as reconciliation lookups:
// reads whatever their method (never held by the gate, no order ID needed)
// that the endpoint's read breaker neither refuses nor counts as failures,
// and whose success closes an open breaker. They are the broker's by
// declaration: whatever host their URL names (a Reconciler's template, for
// example the broker's public API host), they go to the endpoint flow is
// released on, without Options.Hosts listing it. Reconciler's lookups carry it;
// use it in a reconciler of your own that reads through a Transport. The
// last of WithReconcile and WithSubmission applied to a context decides.
func WithReconcile(ctx context.Context) context.Context {
	return context.WithValue(ctx, kindKey{}, kindReconcile)
}

// submissionMethod: a request no rule classifies is a submission unless its
// method is GET, HEAD or OPTIONS.
func submissionMethod(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// markedReconcile reports whether r's context marks it WithReconcile.
func markedReconcile(r *http.Request) bool {
	k, _ := r.Context().Value(kindKey{}).(reqKind)
	return k == kindReconcile
}

// classify returns what r is: its context's mark, else the first rule that
// matches (Options.Rules), else its method (submissionMethod); and the
// Orders rule that matched, if one did. src is the endpoint whose own host r
// names (nil for a logical host): its base path is not part of what the
// rules match.
func (t *Transport) classify(r *http.Request, src *endpointClient) (reqKind, *Rule) {
	k, marked := r.Context().Value(kindKey{}).(reqKind)
	if marked && k != kindSubmission {
		return k, nil
	}
	if t.hasRules {
		p := r.URL.Path
		if src != nil && src.base.Path != "" {
			p = strings.TrimPrefix(p, src.base.Path)
		}
		rk, rule := t.opts.Rules.classify(r.Method, p)
		switch {
		case marked:
			return kindSubmission, rule // marked an order: its rule, if any, still says what identifies it
		case rk != 0:
			return rk, rule
		}
	}
	if marked || submissionMethod(r.Method) {
		return kindSubmission, nil
	}
	return kindRead, nil
}

// venuePrefix marks an order ID that is the venue's own (VenueOrderID).
const venuePrefix = "venue-order-id:"

// VenueOrderID returns how an order named by the venue's own order ID
// (Alpaca's order UUID, Binance's orderId), not by a client order ID, is
// tracked: the ID with a fixed mark before it. Tickets, errors
// (UnknownOutcomeError.OrderID), Options.OnOrder and settlements carry it
// in this form; a Reconciler looks such an order up through
// ReconcileOptions.VenueURL. A client order ID must not begin with the mark.
func VenueOrderID(id string) string { return venuePrefix + id }

// ParseVenueOrderID returns the venue's order ID of an ID made by
// VenueOrderID, and false for a client order ID.
func ParseVenueOrderID(orderID string) (id string, ok bool) {
	return strings.CutPrefix(orderID, venuePrefix)
}

// VenueID marks the ID fn finds as the venue's own order ID (VenueOrderID):
// for a request that names its order by the ID the venue gave it, such as
// a cancel by order ID.
func VenueID(fn OrderIDFunc) OrderIDFunc {
	return func(r *http.Request) (string, error) {
		id, err := fn(r)
		if err != nil || id == "" {
			return "", err
		}
		return VenueOrderID(id), nil
	}
}

// AssignJSONOrderID returns a Rule.AssignID that sets a top-level field of a
// JSON object body to the assigned ID (the rest of the object kept, key
// order aside). It fails for a body that is not a JSON object.
func AssignJSONOrderID(field string) func(r *http.Request, id string) error {
	return func(r *http.Request, id string) error {
		b, err := peekBody(r)
		if err != nil {
			return err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("rest: assigning %q: the body is not a JSON object", field)
		}
		v, _ := json.Marshal(id)
		m[field] = v
		out, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("rest: assigning %q: %w", field, err)
		}
		r.Body = io.NopCloser(bytes.NewReader(out)) // the transport closes the body replaced
		r.ContentLength = int64(len(out))
		r.GetBody = nil
		return nil
	}
}

// OrderIDFunc finds the client order ID of a submission. It may read the body, but
// must leave r.Body readable from the start (the *Body helpers do).
type OrderIDFunc func(r *http.Request) (string, error)

// HeaderOrderID reads the client order ID from a request header.
func HeaderOrderID(name string) OrderIDFunc {
	key := textproto.CanonicalMIMEHeaderKey(name) // once, not per order
	return func(r *http.Request) (string, error) {
		if v := r.Header[key]; len(v) > 0 {
			return v[0], nil
		}
		return "", nil
	}
}

// JSONOrderID reads the client order ID from a top-level field of a JSON body
// (string or number).
func JSONOrderID(field string) OrderIDFunc {
	return func(r *http.Request) (string, error) {
		b, err := peekBody(r)
		if err != nil || len(b) == 0 {
			return "", err
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return "", nil
		}
		raw, ok := m[field]
		if !ok {
			return "", nil
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s, nil
		}
		return strings.Trim(string(raw), `"`), nil
	}
}

// FormOrderID reads the client order ID from a URL query parameter or an
// application/x-www-form-urlencoded body field (Binance's newClientOrderId style).
func FormOrderID(field string) OrderIDFunc {
	return func(r *http.Request) (string, error) {
		if q := r.URL.RawQuery; q != "" && strings.Contains(q, field) {
			if v := r.URL.Query().Get(field); v != "" {
				return v, nil
			}
		}
		if !isFormBody(r) {
			return "", nil
		}
		b, err := peekBody(r)
		if err != nil {
			return "", err
		}
		q, err := url.ParseQuery(string(b))
		if err != nil {
			return "", nil
		}
		return q.Get(field), nil
	}
}

// isFormBody reports whether the Content-Type is application/x-www-form-urlencoded
// (parameters and case ignored), without parsing the media type.
func isFormBody(r *http.Request) bool {
	v := r.Header["Content-Type"]
	if len(v) == 0 {
		return false
	}
	const form = "application/x-www-form-urlencoded"
	ct := v[0]
	for len(ct) > 0 && (ct[0] == ' ' || ct[0] == '\t') {
		ct = ct[1:]
	}
	if len(ct) < len(form) || !strings.EqualFold(ct[:len(form)], form) {
		return false
	}
	rest := ct[len(form):]
	return rest == "" || rest[0] == ';' || rest[0] == ' ' || rest[0] == '\t'
}

// PathOrderID takes the client order ID from the last path segment for the given
// methods (for example DELETE /v1/orders/{client_order_id}).
func PathOrderID(methods ...string) OrderIDFunc {
	return func(r *http.Request) (string, error) {
		for _, m := range methods {
			if r.Method == m {
				base := path.Base(r.URL.Path)
				if base == "/" || base == "." {
					return "", nil
				}
				return base, nil
			}
		}
		return "", nil
	}
}

// FirstOrderID tries each extractor in order and returns the first ID found.
func FirstOrderID(fns ...OrderIDFunc) OrderIDFunc {
	return func(r *http.Request) (string, error) {
		for _, fn := range fns {
			id, err := fn(r)
			if err != nil {
				return "", err
			}
			if id != "" {
				return id, nil
			}
		}
		return "", nil
	}
}

// DefaultOrderID is FirstOrderID of: the X-Client-Order-ID header; the JSON body
// fields client_order_id, clientOrderId and newClientOrderId; for DELETE, the
// query or form field origClientOrderId (the order a Binance-style cancel
// names, before the cancel's own newClientOrderId); the same three names as
// query or form fields; and, for DELETE, the last path segment.
//
// A JSON body is not validated: an ID found in a malformed body is used as it
// is, and the broker refuses the body itself.
var DefaultOrderID OrderIDFunc = defaultOrderID

// defaultOrderID is DefaultOrderID: the header and the JSON body, the common
// cases, tried directly; the rest in turn.
func defaultOrderID(r *http.Request) (string, error) {
	if v := r.Header["X-Client-Order-Id"]; len(v) > 0 && v[0] != "" {
		return v[0], nil
	}
	if id, err := defaultJSONOrderID(r); err != nil || id != "" {
		return id, err
	}
	return defaultOrderIDRest(r)
}

var defaultOrderIDRest = FirstOrderID(
	deleteOnly(FormOrderID("origClientOrderId")),
	FormOrderID("client_order_id"), FormOrderID("clientOrderId"), FormOrderID("newClientOrderId"),
	PathOrderID(http.MethodDelete),
)

// deleteOnly applies fn to DELETE requests only.
func deleteOnly(fn OrderIDFunc) OrderIDFunc {
	return func(r *http.Request) (string, error) {
		if r.Method != http.MethodDelete {
			return "", nil
		}
		return fn(r)
	}
}

// scanBufSize bounds the bodies scanned on the stack (no allocation; small,
// so the client goroutines' stacks need not grow for it).
const scanBufSize = 512

// defaultJSONOrderID finds the three common field names in one pass.
func defaultJSONOrderID(r *http.Request) (string, error) {
	if r.Body == nil || r.Body == http.NoBody || isFormBody(r) {
		return "", nil
	}
	if id, ok := scanInMemory(r.Body); ok {
		return id, nil
	}
	b, err := peekBody(r)
	if err != nil || len(b) == 0 || firstNonWS(b) != '{' {
		return "", err
	}
	if start, end, ok := scanOrderID(b); ok {
		return string(b[start:end]), nil
	}
	var v struct {
		A string `json:"client_order_id"`
		B string `json:"clientOrderId"`
		C string `json:"newClientOrderId"`
	}
	if json.Unmarshal(b, &v) != nil {
		return "", nil
	}
	switch {
	case v.A != "":
		return v.A, nil
	case v.B != "":
		return v.B, nil
	}
	return v.C, nil
}

// scanInMemory is the fast path: an in-memory body is scanned where it lies,
// without consuming it, so net/http still sees the caller's in-memory reader
// and writes headers and body in one go. The ID of a string body is a substring
// of it (strings are immutable: no copy needed); one from a byte slice, which
// the caller may reuse, is copied. ok is false when the body is not in memory,
// or not simple enough to scan.
func scanInMemory(body io.ReadCloser) (id string, ok bool) {
	var b []byte
	var s string // the unread part of a *strings.Reader, when b is a view of it
	switch src := inMemory(body).(type) {
	case *bytes.Buffer:
		b = src.Bytes()
	case *bytes.Reader:
		b = unreadBytes(src)
	case *strings.Reader:
		s = unreadString(src)
		b = unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	default:
		return "", false
	}
	if firstNonWS(b) != '{' {
		return "", true // not a JSON object: no JSON order ID
	}
	start, end, ok := scanOrderID(b)
	switch {
	case !ok:
		return "", false
	case s != "":
		return s[start:end], true
	}
	return string(b[start:end]), true
}

// The readers' fields are read in place, through the layout of their leading
// fields (the contents s and the read position i). readerLayout checks once
// that the standard library still lays them out so; where it does not,
// unreadString and unreadBytes copy instead.
type (
	stringsReaderHead struct {
		s string
		i int64
	}
	bytesReaderHead struct {
		s []byte
		i int64
	}
)

var (
	stringsReaderOK = readerLayout(reflect.TypeFor[strings.Reader](), reflect.TypeFor[stringsReaderHead]())
	bytesReaderOK   = readerLayout(reflect.TypeFor[bytes.Reader](), reflect.TypeFor[bytesReaderHead]())
)

// readerLayout reports whether t starts with the fields of head: same names,
// types and offsets.
func readerLayout(t, head reflect.Type) bool {
	if t.Kind() != reflect.Struct || t.NumField() < head.NumField() {
		return false
	}
	for k := range head.NumField() {
		f, h := t.Field(k), head.Field(k)
		if f.Name != h.Name || f.Type != h.Type || f.Offset != h.Offset {
			return false
		}
	}
	return true
}

// unreadString returns what r would read next, without consuming it.
func unreadString(r *strings.Reader) string {
	n := r.Len()
	if stringsReaderOK {
		h := (*stringsReaderHead)(unsafe.Pointer(r))
		if i := h.i; i >= 0 && i <= int64(len(h.s)) && len(h.s)-int(i) == n {
			return h.s[i:]
		}
	}
	b := make([]byte, n)
	m, _ := r.ReadAt(b, r.Size()-int64(n))
	return string(b[:m])
}

// unreadBytes returns what r would read next, without consuming it. The
// result may share r's memory: it must not be modified.
func unreadBytes(r *bytes.Reader) []byte {
	n := r.Len()
	if bytesReaderOK {
		h := (*bytesReaderHead)(unsafe.Pointer(r))
		if i := h.i; i >= 0 && i <= int64(len(h.s)) && len(h.s)-int(i) == n {
			return h.s[i:]
		}
	}
	b := make([]byte, n)
	m, _ := r.ReadAt(b, r.Size()-int64(n))
	return b[:m]
}

func firstNonWS(b []byte) byte {
	if i := skipWS(b, 0); i < len(b) {
		return b[i]
	}
	return 0
}

// The types io.NopCloser returns (http.NewRequest wraps in-memory bodies in
// them); read-only after initialisation.
var (
	nopCloserType         = reflect.TypeOf(io.NopCloser(nil))
	nopCloserWriterToType = reflect.TypeOf(io.NopCloser(strings.NewReader("")))
	// nopCloserInPlace: both are a struct holding only the io.Reader, which
	// unwrapNopCloser reads in place (checked once, on a real one; otherwise
	// it goes through reflect).
	nopCloserInPlace = checkNopCloserInPlace()
)

func checkNopCloserInPlace() bool {
	for _, t := range []reflect.Type{nopCloserType, nopCloserWriterToType} {
		if t.Kind() != reflect.Struct || t.NumField() != 1 || t.Field(0).Type != reflect.TypeFor[io.Reader]() || t.Field(0).Offset != 0 {
			return false
		}
	}
	r := strings.NewReader("")
	return unwrapInPlace(io.NopCloser(r)) == io.Reader(r) && unwrapInPlace(io.NopCloser(io.Reader(struct{ io.Reader }{r}))) == io.Reader(struct{ io.Reader }{r})
}

// unwrapInPlace returns the io.Reader inside a value of one of the NopCloser
// types: the interface's data word points to the struct, whose one field it is.
func unwrapInPlace(body io.ReadCloser) io.Reader {
	return *(*io.Reader)((*[2]unsafe.Pointer)(unsafe.Pointer(&body))[1])
}

// inMemory returns the *bytes.Buffer, *bytes.Reader or *strings.Reader behind
// body (as http.NewRequest wraps them), or nil.
func inMemory(body io.ReadCloser) io.Reader {
	var r io.Reader = body
	if t := reflect.TypeOf(r); t == nopCloserType || t == nopCloserWriterToType {
		if nopCloserInPlace {
			r = unwrapInPlace(body)
		} else {
			r, _ = reflect.ValueOf(r).Field(0).Interface().(io.Reader)
		}
	}
	switch r.(type) {
	case *bytes.Buffer, *bytes.Reader, *strings.Reader:
		return r
	}
	return nil
}

// peekBody returns the bytes the body will send and leaves r.Body readable from
// the same point. An in-memory body is left in place; any other is read and
// replaced by an in-memory reader (which net/http writes with the headers).
// The returned slice must not be modified.
func peekBody(r *http.Request) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	switch src := inMemory(r.Body).(type) {
	case *bytes.Buffer:
		return src.Bytes(), nil
	case *bytes.Reader:
		return unreadBytes(src), nil
	case *strings.Reader:
		u := unreadString(src)
		return unsafe.Slice(unsafe.StringData(u), len(u)), nil
	}
	var b []byte
	var err error
	if n := r.ContentLength; n > 0 && n < 1<<20 {
		b = make([]byte, n)
		_, err = io.ReadFull(r.Body, b)
	} else {
		b, err = io.ReadAll(r.Body)
	}
	_ = r.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("rest: reading the submission body to find its order ID: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.ContentLength = int64(len(b))
	r.GetBody = nil
	return b, nil
}

// scanOrderID finds the default order-ID fields of a flat JSON object without
// decoding it, and returns the bounds of the ID in b (start == end: none): on the hot path of every submission it is an order of magnitude
// cheaper than json.Unmarshal. ok is false whenever the body is not simple (an
// escape in a key or in the ID, a non-string ID, anything unexpected), and the
// caller then decodes it properly. Priority and "last duplicate wins" follow the
// decoding path.
func scanOrderID(b []byte) (start, end int, ok bool) {
	var vals [3][2]int // bounds of each field's value
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, 0, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return 0, 0, skipWS(b, i+1) == len(b)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, 0, false
		}
		ks, ke, ok := scanSimpleString(b, i)
		if !ok {
			return 0, 0, false
		}
		key := b[ks:ke]
		i = skipWS(b, ke+1)
		if i >= len(b) || b[i] != ':' {
			return 0, 0, false
		}
		i = skipWS(b, i+1)
		slot := -1
		switch string(key) { // no allocation: compared in place
		case "client_order_id":
			slot = 0
		case "clientOrderId":
			slot = 1
		case "newClientOrderId":
			slot = 2
		default:
			// encoding/json matches field names case-insensitively: leave any
			// near-miss to it. (Only a key of the same length can fold to one.)
			switch len(key) {
			case len("client_order_id"), len("clientOrderId"), len("newClientOrderId"):
				if bytes.EqualFold(key, []byte("client_order_id")) || bytes.EqualFold(key, []byte("clientOrderId")) || bytes.EqualFold(key, []byte("newClientOrderId")) {
					return 0, 0, false
				}
			}
		}
		if slot >= 0 {
			if i >= len(b) || b[i] != '"' {
				return 0, 0, false // a number or something else: let json decide
			}
			vs, ve, ok := scanSimpleString(b, i)
			if !ok {
				return 0, 0, false
			}
			vals[slot] = [2]int{vs, ve}
			i = ve + 1
		} else {
			var ok bool
			if i, ok = skipValue(b, i); !ok {
				return 0, 0, false
			}
		}
		i = skipWS(b, i)
		if i >= len(b) {
			return 0, 0, false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
			continue
		case '}':
			if skipWS(b, i+1) != len(b) {
				return 0, 0, false
			}
			for _, v := range vals {
				if v[1] > v[0] {
					return v[0], v[1], true
				}
			}
			return 0, 0, true
		}
		return 0, 0, false
	}
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanSimpleString returns the bounds of the string starting at b[i] == '"';
// ok is false for an unterminated string or one with escapes, control bytes or
// non-ASCII bytes (encoding/json folds and repairs those; leave them to it).
func scanSimpleString(b []byte, i int) (start, end int, ok bool) {
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			return i + 1, j, true
		case c == '\\' || c < 0x20 || c >= 0x80: // escapes, control bytes, non-ASCII: decode properly
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// skipValue skips any JSON value starting at b[i] (strings may hold escapes
// here; nesting is tracked) and returns the index after it.
func skipValue(b []byte, i int) (int, bool) {
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			j := i + 1
			for ; j < len(b) && b[j] != '"'; j++ {
				if b[j] == '\\' {
					j++
				}
			}
			if j >= len(b) {
				return 0, false
			}
			i = j + 1
		case '{', '[':
			depth++
			i++
		case '}', ']':
			if depth == 0 {
				return i, true
			}
			depth--
			i++
		case ',':
			if depth == 0 {
				return i, true
			}
			i++
		default:
			i++
		}
		if depth == 0 && i < len(b) && (b[i] == ',' || b[i] == '}') {
			return i, true
		}
	}
	return 0, false
}
