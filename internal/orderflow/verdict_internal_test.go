package orderflow

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

// The region a settlement names is read without the punctuation the Path
// appends to its detail ("booked through eu; found by the re-query").
func TestVerdictRegionFromDetail(t *testing.T) {
	for detail, want := range map[string]string{
		"booked through eu":                          "eu",
		"booked through eu; found after quarantine":  "eu",
		"status filled, booked through us-east-1, x": "us-east-1",
		"not found": "",
	} {
		v := verdictOf(pathdialer.Settlement{OrderID: "o1", Fate: pathdialer.FateFilled, Detail: detail}, time.Now(), "reconcile")
		if v.Region != want {
			t.Errorf("%q: region %q, want %q", detail, v.Region, want)
		}
	}
}
