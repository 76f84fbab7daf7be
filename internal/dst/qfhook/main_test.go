package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The edits apply exactly once to the quickfix go.mod requires, the result
// parses, and run writes a go.mod that points quickfix at the copy.
func TestRunWritesPatchedCopy(t *testing.T) {
	out := t.TempDir()
	mf, err := run(out)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := os.ReadFile(mf)
	if err != nil {
		t.Fatal(err)
	}
	if want := "replace " + quickfixModule + " => " + filepath.Join(out, "quickfix"); !strings.Contains(string(mod), want) {
		t.Fatalf("go.mod lacks %q", want)
	}
	acc, err := os.ReadFile(filepath.Join(out, "quickfix", "acceptor.go"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(acc), "simListen(address)") || strings.Contains(string(acc), `net.Listen("tcp", address)`) {
		t.Fatal("acceptor.go not patched")
	}
	if _, err := os.Stat(filepath.Join(out, "quickfix", "zz_brokerpath_simnet.go")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, "go.sum")); err != nil {
		t.Fatal(err)
	}
}

// An edit whose text is not found exactly once is refused, naming the file.
func TestPatchRefusesUnknownVersion(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"acceptor.go", "dialer.go"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("package quickfix\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := patch(dir); err == nil || !strings.Contains(err.Error(), "acceptor.go contains") {
		t.Fatalf("patch of another version: %v", err)
	}
}
