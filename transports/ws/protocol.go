package ws

import (
	"encoding/json"
	"errors"
	"fmt"
)

// FrameKind says what a server message means to the Stream.
type FrameKind int

const (
	// FrameOther is a message the Stream ignores (a pong, an acknowledgement).
	FrameOther FrameKind = iota
	// FrameTick is one sequenced message of a stream.
	FrameTick
	// FrameSnapshot is a stream's state as of Seq; ticks continue from Seq+1.
	FrameSnapshot
	// FrameError is an error reported by the server (Err).
	FrameError
)

// Frame is a server message as the Stream needs to see it.
type Frame struct {
	Kind   FrameKind
	Stream string
	Seq    uint64
	// Err is the server's error text (FrameError).
	Err string
}

// Protocol is the wire protocol of a sequenced market data server: how to
// subscribe, how to resume, and how to read a stream name and a sequence number
// from a message. Implementations must be safe for concurrent use.
type Protocol interface {
	// Subscribe returns the text message that attaches streams from now on; the
	// server is expected to start each with a snapshot.
	Subscribe(streams []string) ([]byte, error)
	// Resume returns the text message asking for every stream's messages after
	// the given sequence number; the server answers with a snapshot when it
	// cannot replay.
	Resume(after map[string]uint64) ([]byte, error)
	// Parse reads one server message. An error makes the Stream drop the
	// connection and resume elsewhere.
	Parse(data []byte) (Frame, error)
}

// JSONProtocol is the default Protocol, the one internal/simbroker speaks:
//
//	→ {"type":"subscribe","streams":["px.EURUSD"]}
//	→ {"type":"resume","streams":{"px.EURUSD":41}}
//	← {"type":"tick","stream":"px.EURUSD","seq":42,...}
//	← {"type":"snapshot","stream":"px.EURUSD","seq":42,...}
//	← {"type":"error","message":"..."}
//
// Any other type (such as "pong") is FrameOther.
type JSONProtocol struct{}

var _ Protocol = JSONProtocol{}

// Subscribe implements Protocol.
func (JSONProtocol) Subscribe(streams []string) ([]byte, error) {
	if len(streams) == 0 {
		return nil, errors.New("ws: subscribe: no streams")
	}
	return json.Marshal(struct {
		Type    string   `json:"type"`
		Streams []string `json:"streams"`
	}{"subscribe", streams})
}

// Resume implements Protocol.
func (JSONProtocol) Resume(after map[string]uint64) ([]byte, error) {
	if len(after) == 0 {
		return nil, errors.New("ws: resume: no streams")
	}
	return json.Marshal(struct {
		Type    string            `json:"type"`
		Streams map[string]uint64 `json:"streams"`
	}{"resume", after})
}

// Parse implements Protocol.
func (JSONProtocol) Parse(data []byte) (Frame, error) {
	var m struct {
		Type    string  `json:"type"`
		Stream  string  `json:"stream"`
		Seq     *uint64 `json:"seq"`
		Message string  `json:"message"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Frame{}, fmt.Errorf("ws: parse: %w", err)
	}
	switch m.Type {
	case "tick", "snapshot":
		if m.Stream == "" || m.Seq == nil {
			return Frame{}, fmt.Errorf("ws: parse: %s without stream or seq", m.Type)
		}
		k := FrameTick
		if m.Type == "snapshot" {
			k = FrameSnapshot
		}
		return Frame{Kind: k, Stream: m.Stream, Seq: *m.Seq}, nil
	case "error":
		return Frame{Kind: FrameError, Err: m.Message}, nil
	default:
		return Frame{Kind: FrameOther}, nil
	}
}
