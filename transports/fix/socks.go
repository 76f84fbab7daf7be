package fix

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

const (
	socksSucceeded      = 0x00
	socksGeneralFailure = 0x01
)

// socksAccept performs the server side of a SOCKS5 handshake (RFC 1928) that
// requires username/password authentication (RFC 1929) with the relay's
// credentials and a CONNECT command; the requested address is ignored (the
// relay always dials the Path's active endpoint). The reply is sent by the
// caller once the upstream connection is made.
func (r *relay) socksAccept(c net.Conn) (err error) {
	// Every error is a refusal, counted before the client can see it (a
	// reply written, or the connection closed by the caller).
	counted := false
	refuse := func() {
		if !counted {
			counted = true
			r.refused.Add(1)
		}
	}
	defer func() {
		if err != nil {
			refuse()
		}
	}()
	_ = c.SetDeadline(time.Now().Add(relayHandshakeTimeout))
	defer func() { _ = c.SetDeadline(time.Time{}) }()
	if err := socksGreeting(c, refuse); err != nil {
		return err
	}
	if err := r.socksAuthenticate(c, refuse); err != nil {
		return err
	}
	return socksConnectRequest(c)
}

// socksGreeting reads the client's greeting and selects username/password
// authentication, refusing a client that does not offer it (refuse counts
// the refusal before the client is answered).
func socksGreeting(c net.Conn, refuse func()) error {
	var hdr [2]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return fmt.Errorf("greeting: %w", err)
	}
	if hdr[0] != 5 {
		return fmt.Errorf("not a SOCKS5 greeting (first byte %#x)", hdr[0])
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return fmt.Errorf("greeting: %w", err)
	}
	ok := false
	for _, m := range methods {
		ok = ok || m == 0x02
	}
	if !ok {
		refuse()
		_, _ = c.Write([]byte{5, 0xff})
		return errors.New("client offers no username/password authentication")
	}
	_, err := c.Write([]byte{5, 0x02})
	return err
}

// socksAuthenticate reads the username/password request (RFC 1929) and
// accepts only the relay's own credentials, compared in constant time
// (refuse counts a refusal before the client is answered).
func (r *relay) socksAuthenticate(c net.Conn, refuse func()) error {
	readField := func() ([]byte, error) {
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return nil, err
		}
		b := make([]byte, n[0])
		_, err := io.ReadFull(c, b)
		return b, err
	}
	var ver [1]byte
	if _, err := io.ReadFull(c, ver[:]); err != nil || ver[0] != 1 {
		return fmt.Errorf("bad authentication request (%v)", err)
	}
	user, err := readField()
	if err != nil {
		return err
	}
	pass, err := readField()
	if err != nil {
		return err
	}
	if subtle.ConstantTimeCompare(user, []byte(r.user))&subtle.ConstantTimeCompare(pass, []byte(r.pass)) != 1 {
		refuse()
		_, _ = c.Write([]byte{1, 1})
		return errors.New("wrong credentials")
	}
	_, err = c.Write([]byte{1, 0})
	return err
}

// socksConnectRequest reads a CONNECT request and skips its address (the
// relay dials the Path's endpoint, whatever the client asked for).
func socksConnectRequest(c net.Conn) error {
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil {
		return fmt.Errorf("request: %w", err)
	}
	if req[0] != 5 || req[1] != 1 {
		return fmt.Errorf("unsupported SOCKS request (version %d, command %d)", req[0], req[1])
	}
	var skip int
	switch req[3] {
	case 1:
		skip = 4
	case 4:
		skip = 16
	case 3:
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return err
		}
		skip = int(n[0])
	default:
		return fmt.Errorf("unsupported address type %d", req[3])
	}
	if _, err := io.ReadFull(c, make([]byte, skip+2)); err != nil {
		return fmt.Errorf("request address: %w", err)
	}
	return nil
}

// socksReply sends the CONNECT reply (bound address 0.0.0.0:0).
func socksReply(c net.Conn, code byte) error {
	_, err := c.Write([]byte{5, code, 0, 1, 0, 0, 0, 0, 0, 0})
	return err
}
