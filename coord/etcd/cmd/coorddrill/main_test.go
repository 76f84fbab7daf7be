package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/pathdialer"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"-role", "monitor", "-region", "us", "-partition", "eu"})
	if err != nil || o.name != "monitor-us" || o.partition != "eu" {
		t.Fatalf("parseFlags = %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"-role", "trader", "-region", "us", "-sim"},
		{"-role", "trader", "-region", "us", "-partition", "eu"},
		{"-role", "monitor"},
		{"-role", "nope", "-region", "eu"},
	} {
		if _, err := parseFlags(args); err == nil {
			t.Errorf("parseFlags(%q) succeeded", strings.Join(args, " "))
		}
	}
}

func TestPartitionProbe(t *testing.T) {
	on := true
	inner := func(context.Context, pathdialer.Endpoint) error { return nil }
	p := partitionProbe(inner, "eu", func() bool { return on })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := p(ctx, pathdialer.Endpoint{Name: "eu", Region: "eu"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("partitioned probe = %v, want a timeout", err)
	}
	if err := p(context.Background(), pathdialer.Endpoint{Name: "us", Region: "us"}); err != nil {
		t.Fatalf("probe of another region = %v", err)
	}
	on = false
	if err := p(context.Background(), pathdialer.Endpoint{Name: "eu", Region: "eu"}); err != nil {
		t.Fatalf("healed probe = %v", err)
	}
}
