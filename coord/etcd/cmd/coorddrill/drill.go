package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	etcdcoord "github.com/brokerpath/brokerpath/coord/etcd"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// partitionedProbe wraps probe so that, while the partition is on, a probe of
// an endpoint in region waits for its timeout as a blackholed network would.
// SIGUSR1 toggles it; after > 0 also turns it on after that long.
func partitionedProbe(ctx context.Context, log *slog.Logger, probe pathdialer.ProbeFunc, region string, after time.Duration) pathdialer.ProbeFunc {
	var on atomic.Bool
	set := func(v bool, why string) {
		on.Store(v)
		if v {
			log.Warn("coorddrill: partition ON: this monitor's probes of the region now time out", "region", region, "by", why)
		} else {
			log.Warn("coorddrill: partition OFF", "region", region, "by", why)
		}
	}
	if after > 0 {
		t := time.AfterFunc(after, func() { set(true, "-partition-after") })
		context.AfterFunc(ctx, func() { t.Stop() })
	}
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(usr1)
		for {
			select {
			case <-ctx.Done():
				return
			case <-usr1:
				set(!on.Load(), "SIGUSR1")
			}
		}
	}()
	return partitionProbe(probe, region, on.Load)
}

// partitionProbe is the probe seen through a partition from region that is
// in force while partitioned() is true.
func partitionProbe(probe pathdialer.ProbeFunc, region string, partitioned func() bool) pathdialer.ProbeFunc {
	return func(ctx context.Context, ep pathdialer.Endpoint) error {
		if ep.Region == region && partitioned() {
			<-ctx.Done()
			return fmt.Errorf("coorddrill: %s blackholed from this monitor (-partition): %w", region, ctx.Err())
		}
		return probe(ctx, ep)
	}
}

// trade submits one small limit order every o.orderEvery through the Path's
// REST transport (a ticket under the current fencing token each) and logs
// where the broker booked it: the evidence that orders follow the assignment.
func trade(ctx context.Context, log *slog.Logger, c *http.Client, o options, apiKey string, f *etcdcoord.Follower) {
	t := time.NewTicker(o.orderEvery)
	defer t.Stop()
	for n := 1; ; n++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		id := fmt.Sprintf("%s-%d-%d", o.name, os.Getpid(), n)
		body := fmt.Sprintf(`{"client_order_id":%q,"symbol":"DRILL","side":"buy","qty":"1","type":"limit","price":"1"}`, id)
		// The host is rewritten to the active endpoint by the transport.
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(o.eu, "/")+"/v1/orders", bytes.NewBufferString(body))
		if err != nil {
			log.Error("coorddrill: order", "err", err)
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(o.apiHeader, apiKey)
		token := f.State().Revision
		resp, err := c.Do(req)
		switch {
		case errors.Is(err, pathdialer.ErrTradingHalted):
			log.Warn("coorddrill: order refused: trading halted", "order", id)
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			log.Warn("coorddrill: order failed", "order", id, "err", err)
		default:
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			log.Info("coorddrill: order", "order", id, "status", resp.StatusCode, "booked_in", resp.Header.Get("X-Region"), "token", token)
		}
	}
}

// ignoreUSR1 keeps a monitor started without -partition alive (and says so)
// when someone sends it the drill's partition signal.
func ignoreUSR1(ctx context.Context, log *slog.Logger) {
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	go func() {
		defer signal.Stop(usr1)
		for {
			select {
			case <-ctx.Done():
				return
			case <-usr1:
				log.Warn("coorddrill: SIGUSR1 ignored: this monitor was started without -partition REGION")
			}
		}
	}()
}
