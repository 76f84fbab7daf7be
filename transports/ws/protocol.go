package ws

import (
	"bytes"
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
	// The Stream also asks for one (by sending Subscribe for a stream already
	// attached) when a gap is not repaired in time or the server restarted.
	FrameSnapshot
	// FrameError is an error reported by the server (Err).
	FrameError
)

// Frame is a server message as the Stream needs to see it.
type Frame struct {
	Kind   FrameKind
	Stream string
	Seq    uint64
	// Epoch, optional, names the sequence space Seq belongs to: a server that
	// restarts its numbering (a restart, a failover to a replica with its own
	// numbering) changes it. Empty means the server has none; see Protocol.
	Epoch string
	// Err is the server's error text (FrameError). The Stream counts it and
	// never logs or exports it: it may carry anything (see redact).
	Err string
}

// Protocol is the wire protocol of a sequenced market data server: how to
// subscribe, how to resume, and how to read a stream name, a sequence number
// and (optionally) an epoch from a message. Implementations must be safe for
// concurrent use.
//
// Epochs: a server whose sequence numbers can start over (a restart, a
// failover to a replica that numbers on its own, as Centrifugo's stream epoch
// says) should put an epoch in every tick and snapshot (Frame.Epoch). When a
// stream's epoch changes the Stream stops comparing sequence numbers across
// it: it takes a snapshot of the new epoch (the first snapshot that carries
// it, asking for one by Subscribe if a tick came first), hands it over with
// Message.Restart set, and continues from there; nothing of the new epoch is
// dropped as a duplicate of the old one. Without epochs the Stream detects a
// restart only from the numbers: a message more than
// StreamConfig.ReplayWindow below the last delivered one, or a requested
// snapshot still below it after StreamConfig.GapTimeout, is a restart. A
// restarted server that has already numbered past the client's last sequence
// cannot be told from a live one without an epoch. A Protocol that also
// implements EpochResumer sends each stream's epoch with its resume.
type Protocol interface {
	// Subscribe returns the text message that attaches streams from now on; the
	// server is expected to start each with a snapshot. The Stream also sends
	// it for an attached stream to ask for a fresh snapshot.
	Subscribe(streams []string) ([]byte, error)
	// Resume returns the text message asking for every stream's messages after
	// the given sequence number; the server answers with a snapshot when it
	// cannot replay.
	Resume(after map[string]uint64) ([]byte, error)
	// Parse reads one server message. An error makes the Stream drop the
	// connection and resume elsewhere; its text is not logged (it may quote
	// the server), only counted (Stats.BadFrames).
	Parse(data []byte) (Frame, error)
}

// Position is where a stream is: the last sequence number delivered and the
// epoch it belongs to ("" when the server sends none).
type Position struct {
	Seq   uint64
	Epoch string
}

// EpochResumer is an optional extension of Protocol for servers that check
// the client's epoch on a resume (as Centrifugo's offset+epoch recovery
// does): when the Protocol implements it, the Stream resumes with
// ResumeEpochs instead of Resume, so a server whose epoch differs can answer
// with a snapshot of its own numbering at once. The Stream handles a new
// epoch either way (see Protocol).
type EpochResumer interface {
	// ResumeEpochs returns the text message asking for every stream's
	// messages after its Position.
	ResumeEpochs(after map[string]Position) ([]byte, error)
}

// JSONProtocol is the default Protocol, for a JSON server that speaks:
//
//	→ {"type":"subscribe","streams":["px.EURUSD"]}
//	→ {"type":"resume","streams":{"px.EURUSD":41}}
//	→ {"type":"resume","streams":{"px.EURUSD":41},"epochs":{"px.EURUSD":"7f3a"}}
//	← {"type":"tick","stream":"px.EURUSD","seq":42,"epoch":"7f3a",...}
//	← {"type":"snapshot","stream":"px.EURUSD","seq":42,"epoch":"7f3a",...}
//	← {"type":"error","message":"..."}
//
// "epoch" is optional (a string or a number; see Protocol). Any other type
// (such as "pong") is FrameOther. Parse errors name what is wrong, never the
// server's text.
type JSONProtocol struct{}

var (
	_ Protocol     = JSONProtocol{}
	_ EpochResumer = JSONProtocol{}
)

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

// ResumeEpochs implements EpochResumer: Resume's message with an "epochs"
// object naming each stream's epoch, left out when no stream has one (the
// message is then exactly Resume's).
func (JSONProtocol) ResumeEpochs(after map[string]Position) ([]byte, error) {
	if len(after) == 0 {
		return nil, errors.New("ws: resume: no streams")
	}
	seqs := make(map[string]uint64, len(after))
	var epochs map[string]string
	for name, p := range after {
		seqs[name] = p.Seq
		if p.Epoch != "" {
			if epochs == nil {
				epochs = map[string]string{}
			}
			epochs[name] = p.Epoch
		}
	}
	return json.Marshal(struct {
		Type    string            `json:"type"`
		Streams map[string]uint64 `json:"streams"`
		Epochs  map[string]string `json:"epochs,omitempty"`
	}{"resume", seqs, epochs})
}

// Parse implements Protocol.
func (JSONProtocol) Parse(data []byte) (Frame, error) {
	var m struct {
		Type    string          `json:"type"`
		Stream  string          `json:"stream"`
		Seq     *uint64         `json:"seq"`
		Epoch   json.RawMessage `json:"epoch"`
		Message string          `json:"message"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Frame{}, fmt.Errorf("%w: not a JSON object with string type, stream, message and an unsigned seq (%d bytes)", ErrBadFrame, len(data))
	}
	switch m.Type {
	case "tick", "snapshot":
		if m.Stream == "" || m.Seq == nil {
			return Frame{}, fmt.Errorf("%w: %s without stream or seq", ErrBadFrame, m.Type)
		}
		epoch, ok := parseEpoch(m.Epoch)
		if !ok {
			return Frame{}, fmt.Errorf("%w: %s with an epoch that is neither a string nor a number", ErrBadFrame, m.Type)
		}
		k := FrameTick
		if m.Type == "snapshot" {
			k = FrameSnapshot
		}
		return Frame{Kind: k, Stream: m.Stream, Seq: *m.Seq, Epoch: epoch}, nil
	case "error":
		return Frame{Kind: FrameError, Err: m.Message}, nil
	default:
		return Frame{Kind: FrameOther}, nil
	}
}

// ErrBadFrame is the error JSONProtocol.Parse wraps for a message it cannot
// read.
var ErrBadFrame = errors.New("ws: unreadable frame")

// parseEpoch reads an optional epoch: absent or null is "", a string is
// itself, a number is its decimal text.
func parseEpoch(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return "", false
	}
	return n.String(), true
}
