package ws

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/gorilla/websocket"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// RedactURL returns a WebSocket (or any) address safe to log or export: user
// information and the fragment are removed and every query value is replaced
// by "REDACTED" (the keys stay, so "?token=REDACTED" still says a token was
// configured). Text that does not parse as a URL with a scheme and host is
// replaced whole. Other packages that print a Path's "ws" addresses (status
// pages, snapshots) can use it.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "REDACTED(unparseable address)"
	}
	out := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}
	if u.RawQuery != "" {
		q, err := url.ParseQuery(u.RawQuery)
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var b strings.Builder
		for i, k := range keys {
			if i > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k))
			b.WriteString("=REDACTED")
		}
		if err != nil || b.Len() == 0 {
			b.Reset()
			b.WriteString("REDACTED")
		}
		out.RawQuery = b.String()
	}
	return out.String()
}

// redact returns a description of server-sent text safe to log or export: its
// length, never its content (a server's error text may echo a credential, an
// account number, or bytes crafted for a log).
func redact(serverText string) string {
	return fmt.Sprintf("[%d bytes redacted]", len(serverText))
}

// ErrServerClosed is wrapped by the error a Stream reports when the server
// closed a connection with a close frame.
var ErrServerClosed = errors.New("ws: connection closed by the server")

// ErrFrameTooLarge is wrapped by the error a Stream reports when a server
// message exceeded StreamConfig.ReadLimit.
var ErrFrameTooLarge = errors.New("ws: frame over the read limit")

// safeErr is an error whose text was written by this package and whose cause
// (possibly carrying server text) is kept for errors.Is/As but not printed.
type safeErr struct {
	msg   string
	cause error
}

func (e *safeErr) Error() string { return e.msg }
func (e *safeErr) Unwrap() []error {
	return []error{e.cause}
}

// sanitize rewrites a connection error so its text holds nothing the server
// wrote: a close frame keeps its code and loses its reason; a protocol's parse
// error keeps only that it happened. Errors are still matched by errors.Is/As
// against the original.
func sanitize(err error, limit int64) error {
	if err == nil {
		return nil
	}
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		msg := fmt.Sprintf("%s: close code %d", ErrServerClosed.Error(), ce.Code)
		if ce.Text != "" {
			msg += " " + redact(ce.Text)
		}
		return &safeErr{msg: msg, cause: errors.Join(ErrServerClosed, err)}
	case errors.Is(err, websocket.ErrReadLimit):
		return &safeErr{msg: fmt.Sprintf("%s of %d bytes", ErrFrameTooLarge.Error(), limit), cause: errors.Join(ErrFrameTooLarge, err)}
	}
	return err
}

// badFrame wraps a Protocol.Parse error without its text.
func badFrame(err error, n int) error {
	return &safeErr{msg: fmt.Sprintf("ws: unreadable frame (%d bytes)", n), cause: errors.Join(ErrBadFrame, err)}
}

// sanitizeDial labels a failed dial with the endpoint and keeps the error's
// text when this machine wrote it (network, TLS and certificate errors, the
// Path's refusals, timeouts); any other error, such as an unreadable
// handshake response that quotes what the server sent, keeps only its type.
// errors.Is/As still see the original.
func sanitizeDial(endpoint string, err error) error {
	var (
		ne  net.Error
		he  x509.HostnameError
		ua  x509.UnknownAuthorityError
		ci  x509.CertificateInvalidError
		cv  *tls.CertificateVerificationError
		rh  tls.RecordHeaderError
		ae  tls.AlertError
		ope *net.OpError
	)
	switch {
	case errors.As(err, &ope), errors.As(err, &ne), errors.As(err, &he), errors.As(err, &ua), errors.As(err, &ci),
		errors.As(err, &cv), errors.As(err, &rh), errors.As(err, &ae),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, pathdialer.ErrFenced), errors.Is(err, pathdialer.ErrClosed),
		errors.Is(err, pathdialer.ErrUnknownEndpoint), errors.Is(err, pathdialer.ErrUnknownService):
		return fmt.Errorf("ws: dial endpoint %q: %w", endpoint, err)
	}
	inner := err
	for u := errors.Unwrap(inner); u != nil; u = errors.Unwrap(inner) {
		inner = u
	}
	return &safeErr{msg: fmt.Sprintf("ws: dial endpoint %q: handshake failed (%T; its text is redacted, it may quote the server)", endpoint, inner), cause: err}
}
