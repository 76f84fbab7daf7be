package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
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
	exe  string // "" : this binary
	args []string
	cmd  *exec.Cmd
	log  *os.File
}

type harness struct {
	o       opts
	mode    string
	work    string
	key     string // the simulated broker's API key
	procs   map[string]*proc
	members []string // etcd member names
	clients map[string]string
	admin   string // the simulated broker's admin address
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
	return h.startExe(name, "", args...)
}

// startExe starts (or restarts, when name ran before) a process: exe, or this
// binary in a role when exe is empty.
func (h *harness) startExe(name, exe string, args ...string) error {
	p := h.procs[name]
	if p == nil {
		p = &proc{name: name, exe: exe, args: args}
		h.procs[name] = p
	}
	exe = p.exe
	if exe == "" {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		exe = self
	}
	lf, err := os.OpenFile(filepath.Join(h.work, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(exe, p.args...)
	cmd.Env = append(os.Environ(), ChildEnv+"=1", APIKeyEnv+"="+h.key)
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

// partition switches the monitor-only partition of a region on or off: its
// probe relay blackholed (every monitor's probes time out) while its REST
// relay still books what reaches it, as in a gray failure or observers cut
// off from the region: the case in which a stale writer does damage.
func (h *harness) partition(ctx context.Context, region string, on bool) error {
	q := "region=" + region + "&kind=partition"
	if !on {
		q = "region=" + region + "&service=probe&kind=none"
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+h.admin+"/fault?"+q, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("simbroker admin /fault?%s: HTTP %d: %s", q, resp.StatusCode, b)
	}
	return nil
}

// simRecord is a record of the simulated broker's audit (GET /audit).
type simRecord struct {
	Seq           int       `json:"seq"`
	Time          time.Time `json:"time"`
	Kind          string    `json:"kind"`
	Region        string    `json:"region"`
	ClientOrderID string    `json:"client_order_id"`
	Token         uint64    `json:"token"`
	Outcome       string    `json:"outcome"`
}

// audit returns the order submissions in the simulated broker's audit.
func (h *harness) audit(ctx context.Context) ([]Record, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.admin+"/audit", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a struct {
		Records []simRecord `json:"records"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return nil, fmt.Errorf("simbroker admin /audit: %w", err)
	}
	var recs []Record
	for _, s := range a.Records {
		if s.Kind == "order" {
			recs = append(recs, fromAudit(s))
		}
	}
	return recs, nil
}

// startEtcd starts three etcd members on fresh loopback ports with their data
// under dir, and returns their client addresses once every member answers and
// the cluster commits a write.
func (h *harness) startEtcd(ctx context.Context, dir string) (string, error) {
	if h.cli != nil {
		_ = h.cli.Close()
		h.cli = nil
	}
	for _, m := range h.members {
		h.kill("etcd-" + m)
		delete(h.procs, "etcd-"+m)
	}
	h.members = nil
	var cluster, clients []string
	peers := map[string]string{}
	for i := range 3 {
		m := fmt.Sprintf("m%d", i)
		c, err := freeAddr()
		if err != nil {
			return "", err
		}
		p, err := freeAddr()
		if err != nil {
			return "", err
		}
		h.members = append(h.members, m)
		h.clients[m], peers[m] = c, p
		cluster = append(cluster, m+"=http://"+p)
		clients = append(clients, c)
	}
	for _, m := range h.members {
		if err := h.start("etcd-"+m, "-role", "etcd", "-name", m, "-client", h.clients[m], "-peer", peers[m],
			"-cluster", strings.Join(cluster, ","), "-dir", filepath.Join(dir, m)); err != nil {
			return "", err
		}
	}
	var err error
	h.cli, err = clientv3.New(clientv3.Config{Endpoints: clients, DialTimeout: 2 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return "", err
	}
	var last error
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		last = nil
		for _, m := range h.members {
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := h.cli.Status(sctx, h.clients[m])
			cancel()
			if err != nil {
				last = fmt.Errorf("etcd member %s: %w", m, err)
				break
			}
		}
		if last == nil {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			_, last = h.cli.Put(pctx, h.o.prefix+"ready", "1")
			cancel()
		}
		if last == nil {
			return strings.Join(clients, ","), nil
		}
	}
	return "", fmt.Errorf("etcd cluster not ready: %v", last)
}

// brokerEps is the simulated broker's GET /endpoints.
type brokerEps struct {
	Regions map[string]struct {
		REST  string `json:"rest"`
		Probe string `json:"probe"`
	} `json:"regions"`
	CAFile string `json:"ca_file"`
}

// brokerEndpoints waits for the simulated broker's admin API and returns its
// regions' addresses.
func (h *harness) brokerEndpoints(ctx context.Context, limit time.Duration) (brokerEps, error) {
	var eps brokerEps
	var last error
	for end := time.Now().Add(limit); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(100 * time.Millisecond) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+h.admin+"/endpoints", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			last = err
			continue
		}
		err = json.NewDecoder(resp.Body).Decode(&eps)
		_ = resp.Body.Close()
		if err == nil && eps.Regions["eu"].REST != "" && eps.Regions["us"].REST != "" && eps.CAFile != "" {
			return eps, nil
		}
		last = fmt.Errorf("endpoints %+v: %v", eps, err)
	}
	return eps, fmt.Errorf("simbroker admin %s not answering: %v", h.admin, last)
}

// buildSimbroker builds cmd/simbroker of the brokerpath module this module
// uses into dir.
func buildSimbroker(ctx context.Context, dir string) (string, error) {
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if p, err := exec.LookPath("go"); err == nil {
		gobin = p
	}
	out, err := exec.CommandContext(ctx, gobin, "list", "-m", "-f", "{{.Dir}}", "github.com/brokerpath/brokerpath").Output()
	if err != nil {
		return "", fmt.Errorf("locating the brokerpath module (go list -m): %w", err)
	}
	root := strings.TrimSpace(string(out))
	exe := filepath.Join(dir, "simbroker")
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", exe, "./cmd/simbroker")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/simbroker in %s: %w\n%s", root, err, b)
	}
	return exe, nil
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
				if r.Booked() && r.Time.After(since) && (region == "" || r.Region == region) {
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
	Expired    int // ticket acquired after the trader's lease deadline, booked (violation)
	LateWrite  int // checked before the deadline, written after it, booked (reported)
	NoDeadline int // booked from a ticket without a deadline (violation)
	Other      int // refused for another reason (duplicate, invalid): not a violation
	Violations []string
	Reported   []string // stale bookings with tokens off: the late writes a token-checking broker refuses
	Unrecov    int
	MaxRecover time.Duration
	Switches   int
}

var faultKinds = []string{"pause-trader", "kill-etcd-leader", "kill-decider", "quorum-loss"}

// runMode runs one token mode: the cluster and its processes, o.iterations
// faults in turn, each followed by a wait for both traders to book through
// the region the fault switched to, then the check of the broker's audit.
func runMode(ctx context.Context, o opts, mode string, seed uint64, out io.Writer) (Result, error) {
	res := Result{Mode: mode, Faults: map[string]int{}}
	work, err := os.MkdirTemp(o.workDir, "coordjepsen-"+mode+"-")
	if err != nil {
		return res, err
	}
	key := make([]byte, 16)
	_, _ = crand.Read(key)
	h := &harness{o: o, mode: mode, work: work, key: hex.EncodeToString(key), procs: map[string]*proc{}, clients: map[string]string{}, out: out}
	defer h.stopAll()
	etcdList, err := h.startEtcdCluster(ctx)
	if err != nil {
		return res, err
	}
	defer h.cli.Close()
	if err := h.startProcesses(ctx, etcdList); err != nil {
		return res, err
	}
	rng := rand.New(rand.NewPCG(seed, uint64(len(mode))))
	active := "eu" // the region the next switch moves away from
	flip := func() {
		other := map[string]string{"eu": "us", "us": "eu"}[active]
		if err := h.partition(ctx, other, false); err != nil {
			res.Violations = append(res.Violations, "harness: "+err.Error())
		}
		if err := h.partition(ctx, active, true); err != nil {
			res.Violations = append(res.Violations, "harness: "+err.Error())
		}
		active = other
	}
	for i := 0; i < o.iterations && ctx.Err() == nil; i++ {
		start := time.Now()
		kind := faultKinds[i%len(faultKinds)]
		res.Faults[kind]++
		res.Iterations++
		if err := h.inject(ctx, kind, rng, flip); err != nil {
			return res, err
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
	if len(res.Violations) == 0 && res.Unrecov == 0 {
		h.stopAll()
		_ = os.RemoveAll(work)
	} else {
		res.Violations = append(res.Violations, "logs and audit.json kept in "+work)
	}
	return res, nil
}

// startEtcdCluster starts three etcd members and returns their client
// addresses, comma-separated. A port chosen free can be taken by another
// process before a member binds it: then the cluster is started again on new
// ports.
func (h *harness) startEtcdCluster(ctx context.Context) (string, error) {
	var etcdList string
	var err error
	for attempt := 1; ; attempt++ {
		etcdList, err = h.startEtcd(ctx, filepath.Join(h.work, fmt.Sprintf("etcd-%d", attempt)))
		if err == nil {
			break
		}
		if attempt == 3 || ctx.Err() != nil {
			return "", fmt.Errorf("%w (logs in %s)", err, h.work)
		}
		fmt.Fprintf(h.out, "coordjepsen: etcd attempt %d: %v; again on new ports\n", attempt, err)
	}
	return etcdList, nil
}

// startProcesses starts the simulated broker (one shared book, tokens
// checked or off as the mode says), three observers, two deciders and two
// traders, and waits until both traders book orders.
func (h *harness) startProcesses(ctx context.Context, etcdList string) error {
	var err error
	h.admin, err = freeAddr()
	if err != nil {
		return err
	}
	if err := h.startExe("simbroker", h.o.simbroker, "-admin", h.admin, "-api-key", h.key, "-tokens", h.mode,
		"-tick", "0", "-regions", "eu,us"); err != nil {
		return err
	}
	eps, err := h.brokerEndpoints(ctx, 60*time.Second)
	if err != nil {
		return fmt.Errorf("%w (logs in %s)", err, h.work)
	}
	common := []string{"-etcd", etcdList, "-eu", eps.Regions["eu"].REST, "-us", eps.Regions["us"].REST,
		"-eu-probe", eps.Regions["eu"].Probe, "-us-probe", eps.Regions["us"].Probe, "-ca", eps.CAFile,
		"-prefix", h.o.prefix, "-ttl", h.o.ttl.String()}
	for _, n := range []string{"obs-eu", "obs-us", "obs-ap"} {
		if err := h.start(n, append([]string{"-role", "observer", "-name", n}, common...)...); err != nil {
			return err
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
			return err
		}
	}
	if _, ok := h.waitOrders(ctx, time.Now(), "eu", 60*time.Second); !ok {
		return fmt.Errorf("no orders from both traders within 60 s (logs in %s)", h.work)
	}
	return nil
}

// inject plays one fault of the given kind: it freezes or kills its target,
// switches the region (flip) while the target is out, and brings the target
// back after a pause (the TTL and half a second for a freeze, a second for a
// kill) and up to a second more drawn from rng.
func (h *harness) inject(ctx context.Context, kind string, rng *rand.Rand, flip func()) error {
	extra := time.Duration(rng.IntN(1000)) * time.Millisecond
	switch kind {
	case "pause-trader":
		tr := "trader-2" // its slow write path: the pause falls between check and write
		if rng.IntN(4) == 0 {
			tr = "trader-1"
		}
		h.signal(tr, syscall.SIGSTOP)
		flip()
		time.Sleep(h.o.ttl + 500*time.Millisecond + extra)
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
			return err
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
			return err
		}
	case "quorum-loss":
		first := rng.IntN(3)
		a, b := h.members[first], h.members[(first+1)%3]
		h.signal("etcd-"+a, syscall.SIGSTOP)
		h.signal("etcd-"+b, syscall.SIGSTOP)
		flip()
		time.Sleep(h.o.ttl + 500*time.Millisecond + extra)
		h.signal("etcd-"+a, syscall.SIGCONT)
		h.signal("etcd-"+b, syscall.SIGCONT)
	}
	return nil
}

// Record is one order submission in the broker's audit, with what the trader
// wrote into its client order ID.
type Record struct {
	Seq     int
	Time    time.Time // when the broker decided
	Region  string    // the region it was submitted through
	Trader  string
	Order   string // client order ID
	Token   uint64 // the fencing token it carried
	Outcome string // the broker's: new, rejected-stale-token, ...
	// Asked is when the trader's transport asked for its ID, right before it
	// acquired the ticket; Written when net/http first read its body, after
	// the ticket's validity was checked; ValidUntil the trader's lease
	// deadline at Written (zero: none), never earlier than the ticket's.
	Asked, Written, ValidUntil time.Time
}

// Booked reports whether the broker booked the order.
func (r Record) Booked() bool { return r.Outcome == "new" || r.Outcome == "cut" }

// fromAudit parses a client order ID "<trader>-<n>.a<asked>.w<written>.d<deadline>":
// asked in Unix microseconds, base 36; written and deadline in microseconds
// after asked (deadline "n": none).
func fromAudit(s simRecord) Record {
	r := Record{Seq: s.Seq, Time: s.Time, Region: s.Region, Order: s.ClientOrderID, Token: s.Token, Outcome: s.Outcome}
	parts := strings.Split(s.ClientOrderID, ".")
	if len(parts) != 4 || !strings.HasPrefix(parts[1], "a") || !strings.HasPrefix(parts[2], "w") || !strings.HasPrefix(parts[3], "d") {
		return r
	}
	i := strings.LastIndexByte(parts[0], '-')
	if i <= 0 {
		return r
	}
	asked, err1 := strconv.ParseInt(parts[1][1:], 36, 64)
	written, err2 := strconv.ParseInt(parts[2][1:], 10, 64)
	if err1 != nil || err2 != nil {
		return r
	}
	if dl := parts[3][1:]; dl != "n" {
		d, err := strconv.ParseInt(dl, 10, 64)
		if err != nil {
			return r
		}
		r.ValidUntil = time.UnixMicro(asked + d)
	}
	r.Trader = parts[0][:i]
	r.Asked, r.Written = time.UnixMicro(asked), time.UnixMicro(asked+written)
	return r
}

// check reads the broker's audit, in the order the broker decided.
func check(res *Result, recs []Record) {
	slices.SortFunc(recs, func(a, b Record) int { return a.Seq - b.Seq })
	var maxTok uint64
	var first = map[uint64]Record{} // first booking under each token
	for _, r := range recs {
		if !r.Booked() {
			switch r.Outcome {
			case "rejected-stale-token":
				res.Refused++
			case "rejected-missing-token":
				res.Violations = append(res.Violations, fmt.Sprintf("order %s (%s) reached the broker without a token", r.Order, r.Trader))
			default:
				res.Other++
			}
			continue
		}
		res.Booked++
		if _, ok := first[r.Token]; !ok {
			first[r.Token] = r
		}
		switch {
		case r.Trader == "":
			res.Violations = append(res.Violations, fmt.Sprintf("order %q booked through %s: not a trader's order", r.Order, r.Region))
		case r.ValidUntil.IsZero():
			res.NoDeadline++
			res.Violations = append(res.Violations, fmt.Sprintf("order %s (%s) booked through %s without a decision deadline", r.Order, r.Trader, r.Region))
		case r.Asked.After(r.ValidUntil):
			res.Expired++
			res.Violations = append(res.Violations, fmt.Sprintf("order %s (%s) acquired at %s, after its lease deadline %s", r.Order, r.Trader, r.Asked.Format(time.StampMicro), r.ValidUntil.Format(time.StampMicro)))
		case r.Written.After(r.ValidUntil):
			res.LateWrite++
			res.Reported = append(res.Reported, fmt.Sprintf("order %s (%s, token %d) checked before its lease deadline %s, written at %s, booked through %s",
				r.Order, r.Trader, r.Token, r.ValidUntil.Format(time.StampMicro), r.Written.Format(time.StampMicro), r.Region))
		}
		if r.Token < maxTok {
			newer := first[maxTok]
			res.Stale++
			msg := fmt.Sprintf("order %s (%s, token %d) booked through %s at %s after order %s under token %d through %s at %s",
				r.Order, r.Trader, r.Token, r.Region, r.Time.Format(time.StampMicro), newer.Order, maxTok, newer.Region, newer.Time.Format(time.StampMicro))
			if res.Mode == "checked" {
				res.Violations = append(res.Violations, "stale writer booked although tokens are checked: "+msg)
			} else {
				res.Reported = append(res.Reported, "stale writer: "+msg)
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
	if o.simbroker == "" {
		dir, err := os.MkdirTemp(o.workDir, "coordjepsen-bin-")
		if err != nil {
			return false, err
		}
		defer os.RemoveAll(dir)
		if o.simbroker, err = buildSimbroker(ctx, dir); err != nil {
			return false, err
		}
	}
	for _, mode := range strings.Split(o.modes, ",") {
		if mode != "checked" && mode != "off" {
			return false, fmt.Errorf("-modes: unknown mode %q (checked, off)", mode)
		}
		fmt.Fprintf(out, "coordjepsen: tokens %s: %d iterations, seed %d, TTL %v ...\n", mode, o.iterations, o.seed, o.ttl)
		res, err := runMode(ctx, o, mode, uint64(o.seed), out)
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
	fmt.Fprintln(tw, "tokens\titerations\tpause/etcd-leader/decider/quorum\tswitches\tbooked\trefused (stale token)\tstale booked (reported)\tacquired after lease deadline\twritten after it (reported)\twithout deadline\tnot recovered\tmax fault→both on new region\tviolations\t")
	ok := true
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%d/%d/%d/%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t%d\t\n", r.Mode, r.Iterations,
			r.Faults["pause-trader"], r.Faults["kill-etcd-leader"], r.Faults["kill-decider"], r.Faults["quorum-loss"],
			r.Switches, r.Booked, r.Refused, r.Stale, r.Expired, r.LateWrite, r.NoDeadline, r.Unrecov, r.MaxRecover.Round(time.Millisecond), len(r.Violations))
		if len(r.Violations) > 0 || r.Unrecov > 0 {
			ok = false
		}
	}
	tw.Flush()
	for _, r := range results {
		for i, v := range r.Reported {
			if i == 5 {
				fmt.Fprintf(out, "  ... %d more\n", len(r.Reported)-i)
				break
			}
			fmt.Fprintf(out, "  reported (tokens %s): %s\n", r.Mode, v)
		}
		for i, v := range r.Violations {
			if i == 20 {
				fmt.Fprintf(out, "  ... %d more\n", len(r.Violations)-i)
				break
			}
			fmt.Fprintf(out, "  VIOLATION (tokens %s): %s\n", r.Mode, v)
		}
	}
	if ok {
		fmt.Fprintln(out, "coordjepsen: PASS — no order the broker booked had its ticket acquired after its trader's lease deadline; with tokens checked no stale writer was booked; every recovery completed")
	} else {
		fmt.Fprintln(out, "coordjepsen: FAIL")
	}
	return ok
}
