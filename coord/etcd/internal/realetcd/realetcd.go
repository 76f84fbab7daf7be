// Package realetcd starts a three-member etcd cluster from the etcd binary
// installed on the machine (Debian's etcd-server: /usr/bin/etcd), as separate
// processes on loopback ports with temporary data directories, and injects the
// member faults a kernel without netem allows: SIGSTOP (a frozen member whose
// TCP connections stay open), SIGCONT, and kill -9.
//
// Every process it starts is stopped by its PID when the cluster is closed.
package realetcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// DefaultBinary is where Debian's etcd-server package installs etcd.
const DefaultBinary = "/usr/bin/etcd"

// ErrNoBinary: the etcd binary is missing; `make test-etcd-real` installs it.
var ErrNoBinary = errors.New("realetcd: etcd binary not found (run `make test-etcd-real`, which installs Debian's etcd-server with apt-get)")

// Binary returns the etcd binary to run: $BROKERPATH_ETCD_BIN if set, else
// DefaultBinary. It returns ErrNoBinary when the file is missing.
func Binary() (string, error) {
	bin := os.Getenv("BROKERPATH_ETCD_BIN")
	if bin == "" {
		bin = DefaultBinary
	}
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%w: %s: %v", ErrNoBinary, bin, err)
	}
	return bin, nil
}

// Member is one etcd process.
type Member struct {
	Name   string
	Client string // host:port of the client listener
	Peer   string // host:port of the peer listener
	dir    string
	cmd    *exec.Cmd
	done   chan struct{}
}

// PID is the member's process id (0 when it is not running).
func (m *Member) PID() int {
	if m.cmd == nil || m.cmd.Process == nil {
		return 0
	}
	return m.cmd.Process.Pid
}

// Cluster is three etcd processes.
type Cluster struct {
	Members []*Member
	bin     string
	dir     string
	logs    string
	mu      sync.Mutex
	closed  bool
	stopped map[int]bool // members SIGSTOPped and not continued
}

// Options tunes the members.
type Options struct {
	// HeartbeatMs and ElectionMs: etcd's --heartbeat-interval and
	// --election-timeout (defaults 100 and 1000, etcd's own). The shortest
	// lease etcd grants is 1.5 election timeouts.
	HeartbeatMs, ElectionMs int
	// Dir holds the data directories and logs; required.
	Dir string
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Start starts three members under o.Dir and waits until each answers and
// the cluster commits a write. A port picked free can be taken before a member
// binds it: then the cluster is started again on new ports (three attempts).
func Start(ctx context.Context, o Options) (*Cluster, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	if o.Dir == "" {
		return nil, errors.New("realetcd: Options.Dir is empty")
	}
	if o.HeartbeatMs == 0 {
		o.HeartbeatMs = 100
	}
	if o.ElectionMs == 0 {
		o.ElectionMs = 1000
	}
	var last error
	for attempt := 1; attempt <= 3 && ctx.Err() == nil; attempt++ {
		c := &Cluster{bin: bin, dir: filepath.Join(o.Dir, fmt.Sprintf("attempt-%d", attempt)), stopped: map[int]bool{}}
		if err := c.start(ctx, o); err != nil {
			c.Close()
			last = err
			continue
		}
		return c, nil
	}
	if last == nil {
		last = ctx.Err()
	}
	return nil, last
}

func (c *Cluster) start(ctx context.Context, o Options) error {
	var initial []string
	for i := range 3 {
		cl, err := freeAddr()
		if err != nil {
			return err
		}
		pe, err := freeAddr()
		if err != nil {
			return err
		}
		m := &Member{Name: fmt.Sprintf("m%d", i), Client: cl, Peer: pe, dir: filepath.Join(c.dir, fmt.Sprintf("m%d", i))}
		c.Members = append(c.Members, m)
		initial = append(initial, m.Name+"=http://"+pe)
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return err
	}
	for _, m := range c.Members {
		log, err := os.Create(filepath.Join(c.dir, m.Name+".log"))
		if err != nil {
			return err
		}
		m.cmd = exec.Command(c.bin,
			"--name", m.Name,
			"--data-dir", m.dir,
			"--listen-client-urls", "http://"+m.Client,
			"--advertise-client-urls", "http://"+m.Client,
			"--listen-peer-urls", "http://"+m.Peer,
			"--initial-advertise-peer-urls", "http://"+m.Peer,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-token", "brokerpath-realetcd",
			"--initial-cluster-state", "new",
			"--heartbeat-interval", fmt.Sprint(o.HeartbeatMs),
			"--election-timeout", fmt.Sprint(o.ElectionMs),
			"--logger", "zap", "--log-outputs", "stderr", "--log-level", "warn",
		)
		m.cmd.Stdout, m.cmd.Stderr = log, log
		// Own process group: a signal to the test's group does not reach it,
		// and nothing here signals anything but this PID.
		m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := m.cmd.Start(); err != nil {
			_ = log.Close()
			return fmt.Errorf("realetcd: start %s: %w", m.Name, err)
		}
		m.done = make(chan struct{})
		go func(m *Member, log *os.File) {
			_ = m.cmd.Wait()
			_ = log.Close()
			close(m.done)
		}(m, log)
	}
	cli, err := c.Client(nil)
	if err != nil {
		return err
	}
	defer cli.Close()
	var last error
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		last = nil
		for _, m := range c.Members {
			select {
			case <-m.done:
				return fmt.Errorf("realetcd: member %s exited (log %s)", m.Name, filepath.Join(c.dir, m.Name+".log"))
			default:
			}
			sctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := cli.Status(sctx, m.Client)
			cancel()
			if err != nil {
				last = fmt.Errorf("realetcd: member %s: %w", m.Name, err)
				break
			}
		}
		if last == nil {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			_, last = cli.Put(pctx, "/realetcd/ready", "1")
			cancel()
			if last == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("realetcd: cluster not ready: %v", last)
}

// Endpoints lists the members' client addresses.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.Members {
		out = append(out, m.Client)
	}
	return out
}

// Client returns a client of all three members; tune, if not nil, may change
// the configuration first.
func (c *Cluster) Client(tune func(*clientv3.Config)) (*clientv3.Client, error) {
	cfg := clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop()}
	if tune != nil {
		tune(&cfg)
	}
	return clientv3.New(cfg)
}

// Leader returns the index of the member that leads (-1 if none answers).
func (c *Cluster) Leader(ctx context.Context) int {
	cli, err := c.Client(nil)
	if err != nil {
		return -1
	}
	defer cli.Close()
	for i, m := range c.Members {
		if c.isStopped(i) {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := cli.Status(sctx, m.Client)
		cancel()
		if err == nil && st.Header.MemberId == st.Leader {
			return i
		}
	}
	return -1
}

func (c *Cluster) isStopped(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stopped[i]
}

func (c *Cluster) signal(i int, sig syscall.Signal) error {
	m := c.Members[i]
	pid := m.PID()
	if pid == 0 {
		return fmt.Errorf("realetcd: member %s is not running", m.Name)
	}
	select {
	case <-m.done:
		return fmt.Errorf("realetcd: member %s has exited", m.Name)
	default:
	}
	return syscall.Kill(pid, sig)
}

// Freeze sends SIGSTOP to member i: its process stops, its sockets stay open.
func (c *Cluster) Freeze(i int) error {
	if err := c.signal(i, syscall.SIGSTOP); err != nil {
		return err
	}
	c.mu.Lock()
	c.stopped[i] = true
	c.mu.Unlock()
	return nil
}

// Thaw sends SIGCONT to member i.
func (c *Cluster) Thaw(i int) error {
	if err := c.signal(i, syscall.SIGCONT); err != nil {
		return err
	}
	c.mu.Lock()
	delete(c.stopped, i)
	c.mu.Unlock()
	return nil
}

// Kill sends SIGKILL to member i and waits for it to exit.
func (c *Cluster) Kill(i int) error {
	if err := c.signal(i, syscall.SIGKILL); err != nil {
		return err
	}
	<-c.Members[i].done
	c.mu.Lock()
	delete(c.stopped, i)
	c.mu.Unlock()
	return nil
}

// Close kills every member still running (by PID; a stopped one is
// continued first so it can die) and waits for them to exit. The data
// directories are left to the caller (a test's TempDir).
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	for _, m := range c.Members {
		if m.done == nil {
			continue
		}
		select {
		case <-m.done:
			continue
		default:
		}
		if pid := m.PID(); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		<-m.done
	}
}
