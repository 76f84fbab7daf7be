// Command qfhook writes a copy of quickfix that can run over in-memory
// connections inside the simulation's testing/synctest bubble, and a go.mod
// for the module that uses it, given to the go command with -modfile:
//
//	mf=$(go run ./internal/dst/qfhook -out=/tmp/qf)
//	go test -tags dstfix -modfile=$mf ./internal/dst
//
// quickfix (v0.9.10) opens operating-system sockets only: Acceptor.Start
// listens with net.Listen on its configured port, and an initiator dials
// with a net.Dialer, directly or through a SOCKS5 proxy. A goroutine blocked
// on such a socket is not durably blocked for testing/synctest, so virtual
// time would stall. The copy changes two lines of quickfix and adds one
// file: Acceptor.Start asks a listener factory for its listener, and the
// dialer quickfix builds from its settings (the forward dialer of its SOCKS5
// proxy, or its plain dialer) dials through a given function, both set by
// quickfix.SetSimNet (package qfnet installs them). Until SetSimNet is
// called, the copy behaves exactly as quickfix does.
//
// The written go.mod is the module's own plus one replace directive that
// points quickfix at the copy (go.sum is copied beside it). A go build
// overlay cannot do this: the go command refuses overlays of files in the
// module cache. Nothing in the module changes; a build without -modfile
// never sees the copy, and -overlay (internal/dst/plant's defects) combines
// with it.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// quickfixModule is the module the copy patches, at the version go.mod
// requires (the edits below are checked to apply exactly once).
const quickfixModule = "github.com/quickfixgo/quickfix"

// edit replaces Old, found exactly once in File, with New.
type edit struct{ File, Old, New string }

var edits = []edit{
	{"acceptor.go",
		`a.listeners[address], err = net.Listen("tcp", address)`,
		`a.listeners[address], err = simListen(address)`},
	{"dialer.go",
		"\tdialer = stdDialer\n",
		"\tdialer = simForward(stdDialer)\n"},
	{"dialer.go",
		`proxyAuth, stdDialer)`,
		`proxyAuth, simForward(stdDialer))`},
}

// hookFile is added to package quickfix.
const hookFile = `package quickfix

import (
	"context"
	"net"
	"sync"
	"time"
)

// This file exists only in brokerpath's simulation builds (a patched
// copy written by internal/dst/qfhook): it lets the simulation give
// quickfix in-memory connections instead of operating-system sockets.

var simNet struct {
	sync.RWMutex
	listen func(address string) (net.Listener, error)
	dial   func(ctx context.Context, network, address string) (net.Conn, error)
}

// SetSimNet makes every Acceptor started from now on take its listener for
// an address from listen (instead of net.Listen), and every initiator
// started from now on dial through dial (directly, or as its SOCKS5 proxy's
// forward dialer). Nil restores the operating system's sockets.
func SetSimNet(listen func(address string) (net.Listener, error), dial func(ctx context.Context, network, address string) (net.Conn, error)) {
	simNet.Lock()
	simNet.listen, simNet.dial = listen, dial
	simNet.Unlock()
}

func simListen(address string) (net.Listener, error) {
	simNet.RLock()
	l := simNet.listen
	simNet.RUnlock()
	if l == nil {
		return net.Listen("tcp", address)
	}
	return l(address)
}

type simContextDialer interface {
	Dial(network, address string) (net.Conn, error)
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

type simDialer struct {
	dial    func(ctx context.Context, network, address string) (net.Conn, error)
	timeout time.Duration
}

func (d simDialer) Dial(network, address string) (net.Conn, error) {
	return d.DialContext(context.Background(), network, address)
}

func (d simDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if d.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.timeout)
		defer cancel()
	}
	return d.dial(ctx, network, address)
}

func simForward(std *net.Dialer) simContextDialer {
	simNet.RLock()
	d := simNet.dial
	simNet.RUnlock()
	if d == nil {
		return std
	}
	return simDialer{dial: d, timeout: std.Timeout}
}
`

func main() {
	out := flag.String("out", "", "directory for the copy of quickfix, go.mod and go.sum")
	flag.Parse()
	if *out == "" {
		fail("qfhook: -out is required")
	}
	mf, err := run(*out)
	if err != nil {
		fail("qfhook: %v", err)
	}
	fmt.Println(mf)
}

// run writes the copy and the go.mod under out and returns the go.mod's path.
func run(out string) (string, error) {
	out, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	src, err := goList("list", "-m", "-f", "{{.Dir}}", quickfixModule)
	if err != nil {
		return "", err
	}
	gomod, err := goList("env", "GOMOD")
	if err != nil {
		return "", err
	}
	if src == "" || gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("no source of %s or no go.mod here (run inside the module, after go mod download)", quickfixModule)
	}
	dst := filepath.Join(out, "quickfix")
	if err := os.RemoveAll(dst); err != nil {
		return "", err
	}
	if err := copyTree(src, dst); err != nil {
		return "", err
	}
	files, err := patch(src)
	if err != nil {
		return "", err
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			return "", err
		}
	}
	mod, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	mod = append(mod, fmt.Sprintf("\nreplace %s => %s\n", quickfixModule, dst)...)
	mf := filepath.Join(out, "go.mod")
	if err := os.WriteFile(mf, mod, 0o644); err != nil {
		return "", err
	}
	sum, err := os.ReadFile(strings.TrimSuffix(gomod, ".mod") + ".sum")
	if err != nil {
		return "", err
	}
	return mf, os.WriteFile(filepath.Join(out, "go.sum"), sum, 0o644)
}

func goList(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(b)), nil
}

// copyTree copies quickfix's source files (not its test data) into dst,
// writable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); rel != "." && (strings.HasPrefix(n, "_") || strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

// patch returns quickfix's patched and added files by name.
func patch(dir string) (map[string][]byte, error) {
	files := map[string][]byte{}
	for _, e := range edits {
		src, ok := files[e.File]
		if !ok {
			var err error
			if src, err = os.ReadFile(filepath.Join(dir, e.File)); err != nil {
				return nil, err
			}
		}
		if n := bytes.Count(src, []byte(e.Old)); n != 1 {
			return nil, fmt.Errorf("%s contains %q %d times, want once (another quickfix version? update qfhook)", e.File, e.Old, n)
		}
		files[e.File] = bytes.Replace(src, []byte(e.Old), []byte(e.New), 1)
	}
	files["zz_brokerpath_simnet.go"] = []byte(hookFile)
	for name, b := range files {
		f, err := format.Source(b)
		if err != nil {
			return nil, fmt.Errorf("patched %s does not parse: %w", name, err)
		}
		files[name] = f
	}
	return files, nil
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(2)
}
