package rest

import (
	"net/url"
	"strings"
)

const redacted = "REDACTED"

// sensitiveWords: a header or query parameter whose lower-cased name contains one
// of these is a credential.
var sensitiveWords = []string{"key", "token", "secret", "signature", "password", "passwd", "auth", "credential", "session", "cookie", "sig"}

// isSensitiveName reports whether a header or query parameter name is treated as a
// credential and masked: Authorization, X-API-Key, X-MBX-APIKEY, Cookie,
// signature, token, apiKey, ... (any name containing key, token, secret,
// signature, sig, password, auth, credential, session or cookie).
func isSensitiveName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range sensitiveWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// redactURL renders u with user information removed and every sensitive query
// parameter's value masked, fit for logs and errors.
func redactURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User = nil
	c.Fragment, c.RawFragment = "", ""
	if c.RawQuery != "" {
		q, err := url.ParseQuery(c.RawQuery)
		if err != nil {
			c.RawQuery = redacted // unparseable: show nothing of it
		} else {
			for k := range q {
				if isSensitiveName(k) {
					q[k] = []string{redacted}
				}
			}
			c.RawQuery = q.Encode()
		}
	}
	return c.String()
}

// RedactError returns err with every URL it carries redacted: net/http's
// http.Client wraps each RoundTrip failure in a *url.Error that repeats the
// request's URL as the application wrote it, query signature and tokens
// included. A *url.Error is rebuilt as one (errors.As still finds it); an
// error that wraps one keeps its whole message, with the URLs masked, and its
// chain for errors.Is. Other errors pass through.
func RedactError(err error) error {
	if err == nil {
		return nil
	}
	if top, ok := err.(*url.Error); ok {
		return &url.Error{Op: top.Op, URL: redactURLString(top.URL), Err: RedactError(top.Err)}
	}
	var found []*url.Error
	walkURLErrors(err, func(ue *url.Error) { found = append(found, ue) })
	if len(found) == 0 {
		return err
	}
	msg := err.Error()
	for _, ue := range found {
		if ue.URL != "" {
			msg = strings.ReplaceAll(msg, ue.URL, redactURLString(ue.URL))
		}
	}
	return &redactedError{msg: msg, err: err}
}

func redactURLString(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return redacted
	}
	return redactURL(u)
}

// walkURLErrors calls f for every *url.Error in err's tree.
func walkURLErrors(err error, f func(*url.Error)) {
	for err != nil {
		if ue, ok := err.(*url.Error); ok {
			f(ue)
		}
		switch x := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range x.Unwrap() {
				walkURLErrors(e, f)
			}
			return
		case interface{ Unwrap() error }:
			err = x.Unwrap()
		default:
			return
		}
	}
}

// redactedError is an error whose message has been masked; errors.Is and
// errors.As see the chain it stands for.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// minSecret: shorter values are not searched for in messages (a "1" would
// mask every digit one); credentials are longer.
const minSecret = 6

// scrub is the last guard on what RoundTrip returns: a message that repeats a
// credential of the request's URL (a sensitive query value, a password),
// whichever path it came by, has it masked.
func scrub(err error, u *url.URL) error {
	err = RedactError(err)
	if u == nil || (u.RawQuery == "" && u.User == nil) {
		return err
	}
	var secrets []string
	if p, ok := u.User.Password(); ok && p != "" {
		secrets = append(secrets, p, url.QueryEscape(p))
	}
	if len(secrets) > 0 && len(secrets[0]) < minSecret {
		secrets = secrets[:0] // too short to tell from other text
	}
	if u.RawQuery != "" {
		q, perr := url.ParseQuery(u.RawQuery)
		if perr != nil {
			secrets = append(secrets, u.RawQuery) // unparseable: all of it
		}
		for k, vs := range q {
			if !isSensitiveName(k) {
				continue
			}
			for _, v := range vs {
				if len(v) >= minSecret {
					secrets = append(secrets, v, url.QueryEscape(v))
				}
			}
		}
	}
	msg := err.Error()
	leaked := false
	for _, s := range secrets {
		if strings.Contains(msg, s) {
			msg = strings.ReplaceAll(msg, s, redacted)
			leaked = true
		}
	}
	if !leaked {
		return err
	}
	return &redactedError{msg: msg, err: err}
}
