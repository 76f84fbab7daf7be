package venue

import (
	"fmt"
	"slices"
)

// The enumerations read and write as their names in JSON and text (a
// profile kept in a configuration file reads "open orders only", not 2).

var (
	basisNames        = []string{"unknown", "documented", "requirement", "reported"}
	supportNames      = []string{"unknown", "no", "yes"}
	dedupScopeNames   = []string{"unknown", "none", "open orders only", "all states"}
	fenceKindNames    = []string{"unknown", "none", "one session per identity", "kill switch"}
	budgetScopeNames  = []string{"unknown", "account", "API key", "IP", "session", "connection"}
	overrunNames      = []string{"unknown", "throttled", "banned", "session terminated"}
	codScopeNames     = []string{"unknown", "none", "connection", "session", "profile", "account"}
	fenceModeNames    = []string{"preserve", "flatten"}
	switchEffectNames = []string{"unknown: reconcile every open order", "none", "old path's orders cancelled", "every open order cancelled"}
)

func enumString[T ~uint8](v T, kind string, names []string) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("%s(%d)", kind, uint8(v))
}

func enumText[T ~uint8](v T, kind string, names []string) ([]byte, error) {
	if int(v) >= len(names) {
		return nil, fmt.Errorf("venue: %s(%d) has no name", kind, uint8(v))
	}
	return []byte(names[v]), nil
}

func enumParse[T ~uint8](dst *T, text []byte, kind string, names []string) error {
	i := slices.Index(names, string(text))
	if i < 0 {
		return fmt.Errorf("venue: %s %q is not one of %q", kind, text, names)
	}
	*dst = T(i)
	return nil
}

func (b Basis) String() string                  { return enumString(b, "Basis", basisNames) }
func (b Basis) MarshalText() ([]byte, error)    { return enumText(b, "Basis", basisNames) }
func (b *Basis) UnmarshalText(t []byte) error   { return enumParse(b, t, "Basis", basisNames) }
func (s Support) String() string                { return enumString(s, "Support", supportNames) }
func (s Support) MarshalText() ([]byte, error)  { return enumText(s, "Support", supportNames) }
func (s *Support) UnmarshalText(t []byte) error { return enumParse(s, t, "Support", supportNames) }
func (d DedupScope) String() string             { return enumString(d, "DedupScope", dedupScopeNames) }
func (d DedupScope) MarshalText() ([]byte, error) {
	return enumText(d, "DedupScope", dedupScopeNames)
}
func (d *DedupScope) UnmarshalText(t []byte) error {
	return enumParse(d, t, "DedupScope", dedupScopeNames)
}
func (f FenceKind) String() string               { return enumString(f, "FenceKind", fenceKindNames) }
func (f FenceKind) MarshalText() ([]byte, error) { return enumText(f, "FenceKind", fenceKindNames) }
func (f *FenceKind) UnmarshalText(t []byte) error {
	return enumParse(f, t, "FenceKind", fenceKindNames)
}
func (s BudgetScope) String() string { return enumString(s, "BudgetScope", budgetScopeNames) }
func (s BudgetScope) MarshalText() ([]byte, error) {
	return enumText(s, "BudgetScope", budgetScopeNames)
}
func (s *BudgetScope) UnmarshalText(t []byte) error {
	return enumParse(s, t, "BudgetScope", budgetScopeNames)
}
func (o Overrun) String() string                 { return enumString(o, "Overrun", overrunNames) }
func (o Overrun) MarshalText() ([]byte, error)   { return enumText(o, "Overrun", overrunNames) }
func (o *Overrun) UnmarshalText(t []byte) error  { return enumParse(o, t, "Overrun", overrunNames) }
func (c CODScope) String() string                { return enumString(c, "CODScope", codScopeNames) }
func (c CODScope) MarshalText() ([]byte, error)  { return enumText(c, "CODScope", codScopeNames) }
func (c *CODScope) UnmarshalText(t []byte) error { return enumParse(c, t, "CODScope", codScopeNames) }
func (m FenceMode) String() string               { return enumString(m, "FenceMode", fenceModeNames) }
func (m FenceMode) MarshalText() ([]byte, error) { return enumText(m, "FenceMode", fenceModeNames) }
func (m *FenceMode) UnmarshalText(t []byte) error {
	return enumParse(m, t, "FenceMode", fenceModeNames)
}
func (s SwitchEffect) String() string { return enumString(s, "SwitchEffect", switchEffectNames) }
func (s SwitchEffect) MarshalText() ([]byte, error) {
	return enumText(s, "SwitchEffect", switchEffectNames)
}
func (s *SwitchEffect) UnmarshalText(t []byte) error {
	return enumParse(s, t, "SwitchEffect", switchEffectNames)
}
