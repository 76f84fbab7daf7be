package ws

import (
	"encoding/json"
	"io"
	"time"

	"github.com/gorilla/websocket"
)

// gorilla's read limit (websocket.Conn.SetReadLimit) counts the bytes of a
// message's frames as they arrive, before permessage-deflate decompression: a
// message of 64 KiB on the wire may decompress to 64 MiB and more, and
// websocket.Conn.ReadMessage reads all of it into memory. Conn's read methods
// below hold the decompressed message to the same limit.

// SetReadLimit sets the largest message the connection accepts, in bytes,
// counted both as it arrives and as it reads once decompressed (a compressed
// message may expand a thousandfold): a larger one makes the read fail with an
// error wrapping websocket.ErrReadLimit, and the connection is then failed (the
// server is sent a close frame "message too big", every later read returns the
// same error: close the Conn). Zero or less means no limit, as in gorilla.
// Read through Conn's own NextReader, ReadMessage and ReadJSON: the embedded
// websocket.Conn's methods count only the bytes on the wire.
func (c *Conn) SetReadLimit(limit int64) {
	c.limit.Store(limit)
	c.Conn.SetReadLimit(limit)
}

// NextReader is websocket.Conn.NextReader with the read limit applied to the
// decompressed message (see SetReadLimit).
func (c *Conn) NextReader() (messageType int, r io.Reader, err error) {
	if e := c.readErr.Load(); e != nil {
		return -1, nil, *e
	}
	mt, r, err := c.Conn.NextReader()
	if err != nil {
		return mt, r, err
	}
	if n := c.limit.Load(); n > 0 {
		r = &boundedReader{r: r, left: n, sticky: c.readErr.Load, fail: c.tooBig}
	}
	return mt, r, nil
}

// ReadMessage is websocket.Conn.ReadMessage with the read limit applied to the
// decompressed message (see SetReadLimit): it never holds more than the limit
// of one message in memory.
func (c *Conn) ReadMessage() (messageType int, p []byte, err error) {
	mt, r, err := c.NextReader()
	if err != nil {
		return mt, nil, err
	}
	p, err = io.ReadAll(r)
	return mt, p, err
}

// ReadJSON is websocket.Conn.ReadJSON with the read limit applied to the
// decompressed message (see SetReadLimit).
func (c *Conn) ReadJSON(v any) error {
	_, r, err := c.NextReader()
	if err != nil {
		return err
	}
	err = json.NewDecoder(r).Decode(v)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF // one value is expected in the message
	}
	return err
}

// boundedReader reads one message and calls fail once the message passes left
// bytes; sticky returns the error of an earlier failure, if any.
type boundedReader struct {
	r      io.Reader
	left   int64
	sticky func() *error
	fail   func() error
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if e := b.sticky(); e != nil {
		return 0, *e
	}
	// Ask for one byte more than is left: getting it means the message is
	// too big.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	if int64(n) > b.left {
		return int(b.left), b.fail()
	}
	b.left -= int64(n)
	return n, err
}

// tooBig fails the connection as gorilla does for a message over the limit on
// the wire: a close frame "message too big" to the server and a sticky error.
func (c *Conn) tooBig() error {
	err := websocket.ErrReadLimit
	if c.readErr.CompareAndSwap(nil, &err) {
		_ = c.Conn.WriteControl(websocket.CloseMessage,
			websocket.FormatCloseMessage(websocket.CloseMessageTooBig, ""), time.Now().Add(time.Second))
	}
	return err
}
