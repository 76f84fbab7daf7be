package orderflow

import "testing"

// A re-sent FIX order's ExecutionReport can arrive before placeFIX marks the
// re-send's attempt sent (SendOrder has not returned yet): the order is booked
// where the session is logged on now, not where the first attempt (found
// NOT_RECEIVED) went.
func TestFIXBookedRegionOfAResendAnsweredBeforeItIsMarkedSent(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    OrderRecord
		via  string
		want string
	}{
		{
			name: "re-send answered before it is marked sent",
			r: OrderRecord{Resent: 1, resending: true, Settled: true, Attempts: []Attempt{
				{Sent: true, Endpoint: "eu"},
				{Resend: true}, // SendOrder wrote it; placeFIX has not marked it yet
			}},
			via: "us", want: "us",
		},
		{
			name: "re-send marked sent",
			r: OrderRecord{Resent: 1, Attempts: []Attempt{
				{Sent: true, Endpoint: "eu"},
				{Resend: true, Sent: true, Endpoint: "us"},
			}},
			via: "us", want: "us",
		},
		{
			// The broker resends missed ExecutionReports after a logon
			// through the new region: booked where it was sent.
			name: "late answer of the first send over the new region",
			r:    OrderRecord{Attempts: []Attempt{{Sent: true, Endpoint: "eu"}}},
			via:  "us", want: "eu",
		},
		{
			// A re-send refused before it left: an answer is the first send's.
			name: "re-send that did not leave",
			r: OrderRecord{Resent: 1, NotSent: "trading halted", Attempts: []Attempt{
				{Sent: true, Endpoint: "eu"},
				{Resend: true},
			}},
			via: "us", want: "eu",
		},
		{
			name: "first send answered before it is marked sent",
			r:    OrderRecord{Attempts: []Attempt{{}}},
			via:  "eu", want: "eu",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := bookedEndpoint(&tc.r, tc.via); got != tc.want {
				t.Fatalf("booked through %q, want %q", got, tc.want)
			}
		})
	}
}
