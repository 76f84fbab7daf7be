package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// ChildEnv marks a process started by the harness: it runs the role its
// arguments name (a test binary checks it in TestMain).
const ChildEnv = "COORDJEPSEN_CHILD"

type proc struct {
	name string
	args []string
	cmd  *exec.Cmd
	log  *os.File
}

type harness struct {
	o       opts
	mode    string
	work    string
	procs   map[string]*proc
	members []string // etcd member names
	clients map[string]string
	admin   string
	cli     *clientv3.Client
	out     io.Writer
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func (h *harness) start(name string, args ...string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	p := h.procs[name]
	if p == nil {
		p = &proc{name: name, args: args}
		h.procs[name] = p
	}
	lf, err := os.OpenFile(filepath.Join(h.work, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, p.args...)
	cmd.Env = append(os.Environ(), ChildEnv+"=1")
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return err
	}
	p.cmd, p.log = cmd, lf
	return nil
}

func (h *harness) signal(name string, sig syscall.Signal) {
	if p := h.procs[name]; p != nil && p.cmd != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(sig)
	}
}

func (h *harness) kill(name string) {
	p := h.procs[name]
	if p == nil || p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	_ = p.cmd.Wait()
	p.log.Close()
	p.cmd = nil
}

func (h *harness) restart(name string) error { return h.start(name) }

func (h *harness) stopAll() {
	for _, p := range h.procs {
		if p.cmd != nil {
			_ = p.cmd.Process.Signal(syscall.SIGCONT)
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	deadline := time.After(10 * time.Second)
	for _, p := range h.procs {
		if p.cmd == nil {
			continue
		}
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-deadline:
			_ = p.cmd.Process.Kill()
			<-done
		}
		p.log.Close()
		p.cmd = nil
	}
}

func (h *harness) setDown(ctx context.Context, region string, down bool) error {
	v := "0"
	if down {
		v = "1"
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+h.admin+"/down?region="+region+"&v="+v, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

func (h *harness) audit(ctx context.Context) ([]Record, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.admin+"/audit", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var recs []Record
	return recs, json.NewDecoder(resp.Body).Decode(&recs)
}

// leaderMember returns the etcd member that leads now ("" if none answers).
func (h *harness) leaderMember(ctx context.Context) string {
	for _, m := range h.members {
		sctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		st, err := h.cli.Status(sctx, h.clients[m])
		cancel()
		if err == nil && st.Leader == st.Header.MemberId {
			return m
		}
	}
	return ""
}

// leadingDecider returns the decider that holds the election.
func (h *harness) leadingDecider(ctx context.Context) string {
	gctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := h.cli.Get(gctx, h.o.prefix+"election/", clientv3.WithFirstCreate()...)
	if err != nil || len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// waitOrders waits until every trader booked an order after since (through
// region, unless it is empty).
func (h *harness) waitOrders(ctx context.Context, since time.Time, region string, limit time.Duration) (time.Duration, bool) {
	end := time.Now().Add(limit)
	for time.Now().Before(end) && ctx.Err() == nil {
		recs, err := h.audit(ctx)
		if err == nil {
			seen := map[string]bool{}
			for _, r := range recs {
				if r.Accepted && r.Time.After(since) && (region == "" || r.Region == region) {
					seen[r.Trader] = true
				}
			}
			if len(seen) == 2 {
				return time.Since(since), true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return time.Since(since), false
}

// Result is one token mode's run.
type Result struct {
	Mode       string
	Iterations int
	Faults     map[string]int
	Booked     int
	Refused    int // refused by the broker: stale token
	Stale      int // booked under a token already superseded (tokens off: reported)
	Expired    int // booked from a ticket granted after its deadline (violation)
	NoDeadline int // booked from a ticket without a deadline (violation)
	Violations []string
	Unrecov    int
	MaxRecover time.Duration
	Switches   int
}

var faultKinds = []string{"pause-trader", "kill-etcd-leader", "kill-decider", "quorum-loss"}

func runMode(ctx context.Context, o opts, mode string, seed uint64) (Result, error) {
	res := Result{Mode: mode, Faults: map[string]int{}}
	work, err := os.MkdirTemp(o.workDir, "coordjepsen-"+mode+"-")
	if err != nil {
		return res, err
	}
	h := &harness{o: o, mode: mode, work: work, procs: map[string]*proc{}, clients: map[string]string{}}
	defer h.stopAll()
	// etcd: three members.
	var cluster, clients []string
	peers := map[string]string{}
	for i := range 3 {
		m := fmt.Sprintf("m%d", i)
		c, err := freeAddr()
		if err != nil {
			return res, err
		}
		p, err := freeAddr()
		if err != nil {
			return res, err
		}
		h.members = append(h.members, m)
		h.clients[m], peers[m] = c, p
		cluster = append(cluster, m+"=http://"+p)
		clients = append(clients, c)
	}
	for _, m := range h.members {
		if err := h.start("etcd-"+m, "-role", "etcd", "-name", m, "-client", h.clients[m], "-peer", peers[m],
			"-cluster", strings.Join(cluster, ","), "-dir", filepath.Join(work, m)); err != nil {
			return res, err
		}
	}
	etcdList := strings.Join(clients, ",")
	h.cli, err = clientv3.New(clientv3.Config{Endpoints: clients, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return res, err
	}
	defer h.cli.Close()
	ready := false
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end) && !ready; {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, err := h.cli.Put(pctx, o.prefix+"ready", "1")
		cancel()
		ready = err == nil
		if !ready {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if !ready {
		return res, fmt.Errorf("etcd cluster not ready (logs in %s)", work)
	}
	// broker
	eu, _ := freeAddr()
	us, _ := freeAddr()
	h.admin, _ = freeAddr()
	bargs := []string{"-role", "broker", "-eu", eu, "-us", us, "-admin", h.admin}
	if mode == "checked" {
		bargs = append(bargs, "-tokens")
	}
	if err := h.start("broker", bargs...); err != nil {
		return res, err
	}
	common := []string{"-etcd", etcdList, "-eu", "http://" + eu, "-us", "http://" + us, "-prefix", o.prefix, "-ttl", o.ttl.String()}
	for _, n := range []string{"obs-eu", "obs-us", "obs-ap"} {
		if err := h.start(n, append([]string{"-role", "observer", "-name", n}, common...)...); err != nil {
			return res, err
		}
	}
	for _, n := range []string{"decider-1", "decider-2", "trader-1", "trader-2"} {
		role := "decider"
		if strings.HasPrefix(n, "trader") {
			role = "trader"
		}
		args := append([]string{"-role", role, "-name", n}, common...)
		if n == "trader-2" {
			args = append(args, "-stall", "50ms")
		}
		if err := h.start(n, args...); err != nil {
			return res, err
		}
	}
	if _, ok := h.waitOrders(ctx, time.Now(), "eu", 60*time.Second); !ok {
		return res, fmt.Errorf("no orders from both traders within 60 s (logs in %s)", work)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(mode))))
	active := "eu" // the region the next switch moves away from
	flip := func() {
		other := map[string]string{"eu": "us", "us": "eu"}[active]
		_ = h.setDown(ctx, other, false)
		_ = h.setDown(ctx, active, true)
		active = other
	}
	for i := 0; i < o.iterations && ctx.Err() == nil; i++ {
		start := time.Now()
		kind := faultKinds[i%len(faultKinds)]
		res.Faults[kind]++
		res.Iterations++
		extra := time.Duration(rng.IntN(1000)) * time.Millisecond
		switch kind {
		case "pause-trader":
			tr := "trader-2" // its slow write path: the pause falls between check and write
			if rng.IntN(4) == 0 {
				tr = "trader-1"
			}
			h.signal(tr, syscall.SIGSTOP)
			flip()
			time.Sleep(o.ttl + 500*time.Millisecond + extra)
			h.signal(tr, syscall.SIGCONT)
		case "kill-etcd-leader":
			m := h.leaderMember(ctx)
			if m == "" {
				m = h.members[rng.IntN(3)]
			}
			h.kill("etcd-" + m)
			flip()
			time.Sleep(time.Second + extra)
			if err := h.restart("etcd-" + m); err != nil {
				return res, err
			}
		case "kill-decider":
			d := h.leadingDecider(ctx)
			if d == "" {
				d = fmt.Sprintf("decider-%d", 1+rng.IntN(2))
			}
			h.kill(d)
			flip()
			time.Sleep(time.Second + extra)
			if err := h.restart(d); err != nil {
				return res, err
			}
		case "quorum-loss":
			first := rng.IntN(3)
			a, b := h.members[first], h.members[(first+1)%3]
			h.signal("etcd-"+a, syscall.SIGSTOP)
			h.signal("etcd-"+b, syscall.SIGSTOP)
			flip()
			time.Sleep(o.ttl + 500*time.Millisecond + extra)
			h.signal("etcd-"+a, syscall.SIGCONT)
			h.signal("etcd-"+b, syscall.SIGCONT)
		}
		// Recovered: both traders book through the region the switch moved to.
		d, ok := h.waitOrders(ctx, start, active, 30*time.Second)
		if !ok {
			res.Unrecov++
			res.Violations = append(res.Violations, fmt.Sprintf("iteration %d (%s): the traders did not both book through %s within 30 s", i, kind, active))
		}
		res.MaxRecover = max(res.MaxRecover, d)
	}
	recs, err := h.audit(ctx)
	if err != nil {
		return res, err
	}
	if b, err := json.MarshalIndent(recs, "", " "); err == nil {
		_ = os.WriteFile(filepath.Join(work, "audit.json"), b, 0o644) // for a post-mortem
	}
	check(&res, recs)
	return res, nil
}

// check reads the broker's audit, in the order the broker processed it.
func check(res *Result, recs []Record) {
	slices.SortFunc(recs, func(a, b Record) int { return a.Seq - b.Seq })
	var maxTok uint64
	var first = map[uint64]Record{} // first booking under each token
	for _, r := range recs {
		if !r.Accepted {
			if strings.HasPrefix(r.Reason, "stale token") {
				res.Refused++
			}
			continue
		}
		res.Booked++
		if _, ok := first[r.Token]; !ok {
			first[r.Token] = r
		}
		if r.ValidUntil.IsZero() {
			res.NoDeadline++
			res.Violations = append(res.Violations, fmt.Sprintf("order %s (%s) booked through %s without a decision deadline", r.Order, r.Trader, r.Region))
		} else if r.Granted.After(r.ValidUntil) {
			res.Expired++
			res.Violations = append(res.Violations, fmt.Sprintf("order %s (%s) granted at %s, after its deadline %s", r.Order, r.Trader, r.Granted.Format(time.StampMicro), r.ValidUntil.Format(time.StampMicro)))
		}
		if r.Token < maxTok {
			newer := first[maxTok]
			res.Stale++
			msg := fmt.Sprintf("order %s (%s, token %d) booked through %s at %s after order %s under token %d through %s at %s",
				r.Order, r.Trader, r.Token, r.Region, r.Time.Format(time.StampMicro), newer.Order, maxTok, newer.Region, newer.Time.Format(time.StampMicro))
			if res.Mode == "checked" {
				res.Violations = append(res.Violations, "stale writer booked although tokens are checked: "+msg)
			}
		}
		if r.Token > maxTok {
			if maxTok != 0 {
				res.Switches++
			}
			maxTok = r.Token
		}
	}
}

func run(ctx context.Context, o opts, out io.Writer) (bool, error) {
	var results []Result
	for _, mode := range strings.Split(o.modes, ",") {
		if mode != "checked" && mode != "off" {
			return false, fmt.Errorf("-modes: unknown mode %q (checked, off)", mode)
		}
		fmt.Fprintf(out, "coordjepsen: tokens %s: %d iterations, seed %d, TTL %v ...\n", mode, o.iterations, o.seed, o.ttl)
		res, err := runMode(ctx, o, mode, uint64(o.seed))
		if err != nil {
			return false, fmt.Errorf("tokens %s: %w", mode, err)
		}
		results = append(results, res)
	}
	ok := printTable(out, results)
	return ok, nil
}

func printTable(out io.Writer, results []Result) bool {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "tokens\titerations\tpause/etcd-leader/decider/quorum\tswitches\tbooked\trefused (stale token)\tstale booked (reported)\tgranted after deadline\twithout deadline\tnot recovered\tmax fault→both on new region\tviolations\t")
	ok := true
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d/%d/%d/%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t\n", r.Mode, r.Iterations,
			r.Faults["pause-trader"], r.Faults["kill-etcd-leader"], r.Faults["kill-decider"], r.Faults["quorum-loss"],
			r.Switches, r.Booked, r.Refused, r.Stale, r.Expired, r.NoDeadline, r.Unrecov, r.MaxRecover.Round(time.Millisecond), len(r.Violations))
		if len(r.Violations) > 0 || r.Unrecov > 0 {
			ok = false
		}
	}
	tw.Flush()
	for _, r := range results {
		for i, v := range r.Violations {
			if i == 20 {
				fmt.Fprintf(out, "  ... %d more\n", len(r.Violations)-i)
				break
			}
			fmt.Fprintf(out, "  VIOLATION (tokens %s): %s\n", r.Mode, v)
		}
	}
	if ok {
		fmt.Fprintln(out, "coordjepsen: PASS — every order in the broker's audit was granted before its decision's deadline; with tokens checked no stale writer was booked; every recovery completed")
	} else {
		fmt.Fprintln(out, "coordjepsen: FAIL")
	}
	return ok
}
