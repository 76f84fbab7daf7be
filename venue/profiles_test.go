package venue_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/venue"
)

func TestShippedProfiles(t *testing.T) {
	want := []string{"alpaca", "binance-spot", "coinbase-advanced-trade", "coinbase-exchange-fix",
		"deribit", "ibkr-client-portal", "kraken-spot", "oanda-v20"}
	var names []string
	for _, p := range venue.Shipped() {
		names = append(names, p.Name)
		t.Run(p.Name, func(t *testing.T) {
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			if p.Scope == "" {
				t.Error("no Scope: which APIs do the facts cover?")
			}
			known := 0
			for name, s := range sources(p) {
				switch {
				case s.Basis == venue.BasisUnknown && s.Note == "":
					t.Errorf("%s is unknown without a note saying what was looked for", name)
				case s.Basis != venue.BasisUnknown:
					known++
					if !strings.HasPrefix(s.URL, "https://") {
						t.Errorf("%s: source %q is not an https URL", name, s.URL)
					}
				}
			}
			if known == 0 {
				t.Error("no known fact at all")
			}
		})
	}
	if !slices.Equal(names, want) {
		t.Fatalf("Shipped() = %v, want %v", names, want)
	}
}

// sources returns every fact's Source by field name (every Fact field of
// Profile, found by reflection so that a new field cannot escape the check).
func sources(p venue.Profile) map[string]venue.Source {
	out := map[string]venue.Source{}
	v := reflect.ValueOf(p)
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Struct {
			continue
		}
		if s, ok := f.FieldByName("Source").Interface().(venue.Source); ok {
			out[v.Type().Field(i).Name] = s
		}
	}
	return out
}

func TestSourcesSeesEveryFact(t *testing.T) {
	if got := len(sources(venue.Conservative())); got != 12 {
		t.Fatalf("found %d facts in Profile, want 12 (update this test and TestUnknownTakesSafeSide when adding one)", got)
	}
}

func TestByName(t *testing.T) {
	p, err := venue.ByName("deribit")
	if err != nil || p.Name != "deribit" {
		t.Fatalf("ByName(deribit) = %q, %v", p.Name, err)
	}
	_, err = venue.ByName("nasdaq")
	if err == nil || !strings.Contains(err.Error(), `"nasdaq"`) || !strings.Contains(err.Error(), "kraken-spot") {
		t.Fatalf("ByName(nasdaq) error = %v, want it to name the venue and the shipped ones", err)
	}
}

// A caller editing a returned profile does not change the next one.
func TestShippedReturnsCopies(t *testing.T) {
	a := venue.Shipped()
	a[0].Name = "edited"
	a[0].LookupBudget.Value.Requests = 1
	if b := venue.Shipped(); b[0].Name == "edited" || b[0].LookupBudget.Value.Requests == 1 {
		t.Fatal("Shipped returned shared state")
	}
}

// Profiles round-trip through JSON, enumerations by name, so a venue can be
// described in a configuration file.
func TestProfileJSONRoundTrip(t *testing.T) {
	for _, p := range append(venue.Shipped(), venue.Conservative()) {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		var q venue.Profile
		if err := json.Unmarshal(b, &q); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("%s: round trip changed the profile:\n%+v\n%+v", p.Name, p, q)
		}
	}
	b, _ := json.Marshal(venue.BinanceSpot())
	for _, s := range []string{`"open orders only"`, `"documented"`, `"reported"`, `"banned"`} {
		if !strings.Contains(string(b), s) {
			t.Errorf("binance-spot JSON lacks %s", s)
		}
	}
	var p venue.Profile
	err := json.Unmarshal([]byte(`{"name":"x","dedup_scope":{"value":"sometimes","basis":"documented"}}`), &p)
	if err == nil || !strings.Contains(err.Error(), `"sometimes"`) {
		t.Fatalf("unmarshal of an unknown DedupScope: %v", err)
	}
}
