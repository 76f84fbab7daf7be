package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// What a reader does: a new module holding the README's quick start block as
// its main.go, `go mod tidy`, a build, the simulated broker started with `go
// run ./cmd/simbroker` (here built first), its printed export lines pasted
// into a shell, and the quick start run twice in a row. Module downloads go
// through GOPROXY as set in the environment (with the module cache warm,
// none happens).
func TestQuickStartInANewModule(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("this test builds a new module: %v", err)
	}
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	block, err := quickStartBlock(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := fmt.Sprintf("module example.com/quickstart\n\ngo 1.26.0\n\nrequire github.com/brokerpath/brokerpath v0.0.0-00010101000000-000000000000\n\nreplace github.com/brokerpath/brokerpath => %s\n", repo)
	sum, err := os.ReadFile(filepath.Join(repo, "go.sum")) // the checksums, so tidy needs no checksum database
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"main.go": []byte(block), "go.mod": []byte(gomod), "go.sum": sum} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The new module may be updated (-mod=mod); the repository never is.
	newEnv := append(os.Environ(), "GOFLAGS=-mod=mod -buildvcs=false", "GOWORK=off")
	repoEnv := append(os.Environ(), "GOFLAGS=-mod=readonly -buildvcs=false", "GOWORK=off")
	goCmd := func(wd string, env []string, args ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goBin, args...)
		cmd.Dir, cmd.Env = wd, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	goCmd(dir, newEnv, "mod", "tidy")
	goCmd(dir, newEnv, "build", "-o", "quickstart", ".")
	goCmd(repo, repoEnv, "build", "-o", filepath.Join(dir, "simbroker"), "./cmd/simbroker")

	// The broker, as documented: no flags.
	broker := exec.Command(filepath.Join(dir, "simbroker"))
	stdout, err := broker.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	broker.Stderr = &stderr
	if err := broker.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = broker.Process.Signal(syscall.SIGTERM)
		_ = broker.Wait()
	}()
	var exports []string
	admin := ""
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	deadline := time.After(time.Minute)
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("simbroker exited before it was ready: %s", stderr.String())
			}
			if s := strings.TrimSpace(l); strings.HasPrefix(s, "export ") {
				exports = append(exports, s)
			} else if f := strings.Fields(s); len(f) > 1 && f[0] == "admin" {
				admin = f[1]
			}
			done = strings.HasPrefix(l, "Ctrl-C")
		case <-deadline:
			t.Fatalf("simbroker printed no endpoints in a minute: %s", stderr.String())
		}
	}
	go func() { // keep its pipe drained
		for range lines {
		}
	}()
	if len(exports) == 0 || admin == "" {
		t.Fatalf("simbroker printed no export lines or no admin URL")
	}

	// Run as a reader would: the export lines pasted into a shell, then the
	// program, twice.
	ids := map[string]bool{}
	for i := range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", strings.Join(exports, "\n")+"\nexec ./quickstart")
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i+1, err, out)
		}
		for _, id := range checkOutput(t, string(out)) {
			ids[id] = true
		}
	}
	if len(ids) != 4 {
		t.Fatalf("two runs named the client order IDs %v, want four different ones", ids)
	}

	// The broker's book has each of them once, filled.
	resp, err := http.Get(admin + "/book")
	if err != nil {
		t.Fatal(err)
	}
	defer http.DefaultClient.CloseIdleConnections()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var book struct {
		Orders []struct {
			ClientOrderID string `json:"client_order_id"`
			Status        string
		}
	}
	if err := json.Unmarshal(body, &book); err != nil {
		t.Fatalf("admin /book: %v: %s", err, body)
	}
	seen := map[string]int{}
	for _, o := range book.Orders {
		seen[o.ClientOrderID]++
		if ids[o.ClientOrderID] && o.Status != "filled" {
			t.Errorf("order %s: %s, want filled", o.ClientOrderID, o.Status)
		}
	}
	for id := range ids {
		if seen[id] != 1 {
			t.Errorf("the broker booked %s %d times, want once", id, seen[id])
		}
	}
	if len(book.Orders) != 4 {
		t.Errorf("the broker booked %d orders, want 4: %s", len(book.Orders), regexp.MustCompile(`\s+`).ReplaceAllString(string(body), " "))
	}
}
