package rest_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"

	"github.com/brokerpath/brokerpath/pathdialer"
	"github.com/brokerpath/brokerpath/transports/rest"
)

// An order that reached the broker is never "not sent", however its
// connection ends before the answer: the broker closes it (EOF), resets it
// (RST: a read error on a connection that existed), or the caller gives up
// waiting. Each is an unknown outcome, handed to reconciliation, never a
// resend: "not sent" on any of them is the lost-order class (a booked
// order the client believes never left). A dial that fails is the one
// "not sent" here (TestSubmissionThatNeverConnectedIsNotSentNotUnknown).
func TestOrderThatReachedTheBrokerIsNeverNotSent(t *testing.T) {
	for _, c := range []struct {
		name string
		end  func(w http.ResponseWriter, r *http.Request, cancel context.CancelFunc)
	}{
		{"closed", func(w http.ResponseWriter, r *http.Request, _ context.CancelFunc) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}},
		{"reset", func(w http.ResponseWriter, r *http.Request, _ context.CancelFunc) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			if tc, ok := conn.(interface{ NetConn() net.Conn }); ok {
				if tcp, ok := tc.NetConn().(*net.TCPConn); ok {
					_ = tcp.SetLinger(0) // Close sends RST
					_ = tcp.Close()
					return
				}
			}
			_ = conn.Close()
		}},
		{"caller-gave-up", func(w http.ResponseWriter, r *http.Request, cancel context.CancelFunc) {
			cancel() // the caller's context ends while the broker holds the answer
			<-r.Context().Done()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			booked := make(chan string, 1)
			eu := newServer(t, "eu", false, func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					w.WriteHeader(http.StatusOK)
					return
				}
				body, _ := io.ReadAll(r.Body)
				booked <- string(body) // the broker has the order
				c.end(w, r, cancel)
			})
			us := newServer(t, "us", false, nil)
			h := newHarness(t, eu.URL, us.URL, func(c *pathdialer.Config) { c.Engine.FailureThreshold = 50 })
			cl, rt := newClient(t, h, rest.Options{TLSConfig: rootsOf(eu, us)})
			resp, err := order(t, ctx, cl, "o-lost")
			if resp != nil {
				_ = resp.Body.Close()
			}
			if len(booked) != 1 {
				t.Fatalf("the broker never received the order (err %v)", err)
			}
			v := rest.Outcome(resp, err)
			if v.Kind != rest.Unknown || v.MayResend || errors.Is(err, rest.ErrNotSent) {
				t.Fatalf("an order the broker received was judged %s (may resend %v): %v", v.Kind, v.MayResend, err)
			}
			var uerr *rest.UnknownOutcomeError
			if !errors.As(err, &uerr) || uerr.OrderID != "o-lost" || uerr.Endpoint != "eu" {
				t.Fatalf("err = %v, want *UnknownOutcomeError for o-lost on eu", err)
			}
			if u := h.path.Unknown(); len(u) != 1 || u[0].OrderID != "o-lost" {
				t.Fatalf("path's unknown tickets = %+v, want o-lost", u)
			}
			if n := rt.Stats().NotSent.Load(); n != 0 {
				t.Fatalf("NotSent = %d, want 0", n)
			}
		})
	}
}
