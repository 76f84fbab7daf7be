package venue

// Basis says how a fact about a venue is known. The zero value is
// BasisUnknown, so a fact nobody filled in is unknown, never "none".
type Basis uint8

const (
	// BasisUnknown: nobody documents it. The rules take the safe side and
	// ignore the fact's Value.
	BasisUnknown Basis = iota
	// BasisDocumented: the venue's own public documentation states it.
	BasisDocumented
	// BasisRequirement: the venue's documentation tells clients to do (or not
	// do) something, but does not say what the venue does when a client does
	// otherwise ("the ID must be unique for 24 h"). The rules never rely on
	// the venue enforcing it.
	BasisRequirement
	// BasisReported: not in the venue's documentation, but measured or
	// reported by its users (issue threads, client libraries' error
	// handling). Used as the best estimate; Source.Note says by whom.
	BasisReported
)

// Source is where a fact comes from: the public page, the sentence relied on,
// and how it is known. Every known fact of a shipped Profile has one.
type Source struct {
	// URL of the public documentation page (or issue thread for
	// BasisReported). Required unless Basis is BasisUnknown.
	URL string `json:"url,omitempty"`
	// Quote is the sentence relied on, as the page words it (shortened with
	// "…"). Required unless Basis is BasisUnknown.
	Quote string `json:"quote,omitempty"`
	// Basis says how the fact is known.
	Basis Basis `json:"basis"`
	// Note says what is not known, how a figure was measured, or what a
	// user must check. For an unknown fact it says what was searched.
	Note string `json:"note,omitempty"`
}

// Fact is one fact about a venue with its source. A Fact whose Basis is
// BasisUnknown is unknown whatever its Value: the rules take the safe side.
type Fact[T any] struct {
	Value T `json:"value"`
	Source
}

// Known reports whether the fact has a basis other than BasisUnknown.
func (f Fact[T]) Known() bool { return f.Basis != BasisUnknown }

// Reliable reports whether the rules may build a guarantee on the fact: the
// venue documents it, or its users measured it. A bare requirement on the
// client (BasisRequirement) is not enough.
func (f Fact[T]) Reliable() bool {
	return f.Basis == BasisDocumented || f.Basis == BasisReported
}

// Documented returns a documented fact.
func Documented[T any](v T, url, quote string) Fact[T] {
	return Fact[T]{Value: v, Source: Source{URL: url, Quote: quote, Basis: BasisDocumented}}
}

// Unknown returns an unknown fact, with a note saying what was looked for.
func Unknown[T any](note string) Fact[T] {
	return Fact[T]{Source: Source{Basis: BasisUnknown, Note: note}}
}

// With returns f with its Note set.
func (f Fact[T]) With(note string) Fact[T] {
	f.Note = note
	return f
}

// Support is a yes/no fact that can be unknown. The zero value is
// SupportUnknown.
type Support uint8

const (
	// SupportUnknown: not documented either way; the rules assume the
	// feature is absent.
	SupportUnknown Support = iota
	// Unsupported: the venue does not offer it.
	Unsupported
	// Supported: the venue offers it.
	Supported
)
