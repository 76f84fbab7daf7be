package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/brokerpath/brokerpath/venue/internal/venuedoc"
)

func TestWriteThenCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "README.md")
	if err := os.WriteFile(path, []byte("intro\n"+venuedoc.Begin+"\nold\n"+venuedoc.End+"\nend\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-check", path}, nil); err == nil {
		t.Fatal("-check passed a stale README")
	}
	if err := run([]string{"-w", path}, nil); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"-check", path}, nil); err != nil {
		t.Fatalf("-check after -w: %v", err)
	}
	b, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(b), "intro\n") || !strings.HasSuffix(string(b), "end\n") || strings.Contains(string(b), "\nold\n") {
		t.Fatalf("-w wrote:\n%s", b)
	}
}

func TestPrintAndBadUse(t *testing.T) {
	var out bytes.Buffer
	if err := run(nil, &out); err != nil || out.String() != venuedoc.Section() {
		t.Fatalf("print: err %v, output differs from Section", err)
	}
	for _, args := range [][]string{{"extra"}, {"-w", "a", "-check", "b"}, {"-w", filepath.Join(t.TempDir(), "missing.md")}} {
		if err := run(args, &out); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
	noMarkers := filepath.Join(t.TempDir(), "README.md")
	os.WriteFile(noMarkers, []byte("# no markers\n"), 0o644)
	if err := run([]string{"-w", noMarkers}, nil); err == nil || !strings.Contains(err.Error(), noMarkers) {
		t.Errorf("-w on a README without markers: %v", err)
	}
}
