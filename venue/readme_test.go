package venue_test

import (
	"os"
	"testing"

	"github.com/brokerpath/brokerpath/venue/internal/venuedoc"
)

// The README's resting-orders table is generated from the shipped profiles:
// a fact changed in a profile without regenerating the README fails here.
func TestREADMERestingOrdersTableMatchesProfiles(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := venuedoc.Check(string(readme)); err != nil {
		t.Fatal(err)
	}
}
