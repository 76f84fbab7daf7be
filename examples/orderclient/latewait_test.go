package main

import (
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/internal/orderflow"
)

// The run waits for a late landing's report only while the library may
// still make it: until the latest unreported booking plus the bound; not for
// reported landings, nor for one booked after a final verdict (judged a
// violation at once).
func TestLateReportsDue(t *testing.T) {
	start := time.Date(2026, 12, 6, 15, 0, 0, 0, time.UTC)
	const bound = 11500 * time.Millisecond
	land := func(booked time.Duration, reported, afterFinal bool) orderflow.LateLanding {
		return orderflow.LateLanding{Order: "o", BookedAt: booked, Reported: reported, AfterFinal: afterFinal}
	}
	for _, tc := range []struct {
		name  string
		lands []orderflow.LateLanding
		want  time.Duration // since start; -1: none is waiting
	}{
		{"none", nil, -1},
		{"all reported", []orderflow.LateLanding{land(6566*time.Millisecond, true, false)}, -1},
		{"after a final verdict", []orderflow.LateLanding{land(6567*time.Millisecond, false, true)}, -1},
		{"one booked just after the recovery's look", []orderflow.LateLanding{
			land(6566*time.Millisecond, true, false), land(6567*time.Millisecond, false, false)}, 6567*time.Millisecond + bound},
		{"the latest of two unreported", []orderflow.LateLanding{
			land(9*time.Second, false, false), land(6567*time.Millisecond, false, false)}, 9*time.Second + bound},
	} {
		got := lateReportsDue(tc.lands, start, bound)
		switch {
		case tc.want < 0 && !got.IsZero():
			t.Errorf("%s: waits until +%v; want no wait", tc.name, got.Sub(start))
		case tc.want >= 0 && !got.Equal(start.Add(tc.want)):
			t.Errorf("%s: waits until %v; want +%v", tc.name, got, tc.want)
		}
	}
}
