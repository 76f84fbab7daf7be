package rest

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

const redacted = "REDACTED"

// sensitiveWords: a header or query parameter whose lower-cased name contains one
// of these is a credential.
var sensitiveWords = []string{"key", "token", "secret", "signature", "password", "passwd", "auth", "credential", "session", "cookie", "sig"}

// IsSensitiveName reports whether a header or query parameter name is treated as a
// credential and masked: Authorization, X-API-Key, X-MBX-APIKEY, Cookie,
// signature, token, apiKey, ... (any name containing key, token, secret,
// signature, sig, password, auth, credential, session or cookie).
func IsSensitiveName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range sensitiveWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// RedactURL renders u with user information removed and every sensitive query
// parameter's value masked, fit for logs and errors.
func RedactURL(u *url.URL) string {
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
				if IsSensitiveName(k) {
					q[k] = []string{redacted}
				}
			}
			c.RawQuery = q.Encode()
		}
	}
	return c.String()
}

// RedactHeader returns a copy of h with the values of sensitive headers masked.
func RedactHeader(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, v := range h {
		if IsSensitiveName(k) {
			out[k] = []string{redacted}
		} else {
			out[k] = append([]string(nil), v...)
		}
	}
	return out
}

// RedactError returns err with any URL it carries (net/http wraps transport errors
// in *url.Error, which repeats the whole URL) redacted. Other errors pass through.
func RedactError(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	safe := redacted
	if u, perr := url.Parse(ue.URL); perr == nil {
		safe = RedactURL(u)
	}
	return &url.Error{Op: ue.Op, URL: safe, Err: ue.Err}
}
