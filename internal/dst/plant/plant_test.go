package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `package p

import (
	"fmt"
)

// Hello greets.
func Hello(name string) string {
	return fmt.Sprintf("hello %s", name)
}

type T struct{ n int }

// Inc adds one.
func (t *T) Inc() {
	// plant:inc begin
	t.n++
	// plant:inc end
}

func (t T) Get() int { return t.n }
`

func TestApplyFunc(t *testing.T) {
	for _, name := range []string{"T.Inc", "(*T).Inc", "*T.Inc"} {
		out, err := apply([]byte(sample), Defect{Name: "x", File: "p.go", Func: name, Body: "func (t *T) Inc() { t.n += 2; runtime.Gosched() }", Imports: []string{"runtime"}}, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		s := string(out)
		if !strings.Contains(s, "t.n += 2") || strings.Contains(s, "t.n++") || !strings.Contains(s, `"runtime"`) || !strings.Contains(s, "// Inc adds one.") {
			t.Fatalf("%s: not planted as asked:\n%s", name, s)
		}
	}
	if _, err := apply([]byte(sample), Defect{Name: "x", File: "p.go", Func: "T.Dec", Body: "func (t *T) Dec() {}"}, ""); err == nil || !strings.Contains(err.Error(), "declares no T.Dec") {
		t.Fatalf("a missing function: %v", err)
	}
	if _, err := apply([]byte(sample), Defect{Name: "x", File: "p.go", Func: "Hello", Body: "func Hello( {"}, ""); err == nil || !strings.Contains(err.Error(), "does not parse") {
		t.Fatalf("a body that does not parse: %v", err)
	}
}

func TestApplyMarkerAndText(t *testing.T) {
	out, err := apply([]byte(sample), Defect{Name: "m", File: "p.go", Marker: "inc", Body: "t.n--\n{{gap}}"}, "runtime.Gosched()")
	if err != nil {
		t.Fatal(err)
	}
	if s := string(out); !strings.Contains(s, "t.n--") || strings.Contains(s, "t.n++") || !strings.Contains(s, "runtime.Gosched()") || !strings.Contains(s, "plant:inc end") {
		t.Fatalf("marker not planted:\n%s", s)
	}
	if _, err := apply([]byte(sample), Defect{Name: "m", File: "p.go", Marker: "nope", Body: "x"}, ""); err == nil {
		t.Fatal("a missing marker was accepted")
	}
	out, err = apply([]byte(sample), Defect{Name: "t", File: "p.go", Old: `"hello %s"`, Body: `"bye %s"`}, "")
	if err != nil || !strings.Contains(string(out), `"bye %s"`) {
		t.Fatalf("text: %v\n%s", err, out)
	}
	if _, err := apply([]byte(sample), Defect{Name: "t", File: "p.go", Old: "t.n", Body: "x"}, ""); err == nil || !strings.Contains(err.Error(), "times, want once") {
		t.Fatalf("an ambiguous text: %v", err)
	}
	if _, err := apply([]byte(sample), Defect{Name: "t", File: "p.go", Old: "a", Func: "Hello"}, ""); err == nil {
		t.Fatal("a defect with two ways was accepted")
	}
}

// Every registered defect applies to the module as it is, and the overlay
// names the real file.
func TestRegisteredDefectsApply(t *testing.T) {
	root, err := moduleRoot("")
	if err != nil {
		t.Fatal(err)
	}
	for name := range defects {
		d, _ := lookup(name)
		if err := checkInvariant(root, d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, gap := range []string{"none", "gosched", "3ms"} {
			g, imps, err := gapOf(gap)
			if err != nil {
				t.Fatal(err)
			}
			files, err := plantFiles(root, []Defect{d}, g, imps)
			if err != nil {
				t.Fatalf("%s (gap %s): %v", name, gap, err)
			}
			dir := t.TempDir()
			ov, err := writeOverlay(dir, files)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(ov)
			if !strings.Contains(string(raw), filepath.Join(root, filepath.FromSlash(d.File))) {
				t.Fatalf("%s: overlay does not replace %s: %s", name, d.File, raw)
			}
		}
	}
}

// A defect's packages are found by the nearest go.mod: the root module's
// packages by their directory, another module's by its directory and the
// package's within it; a defect outside the root module has no invariant.
func TestPackagesOf(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"go.mod", "a/a.go", "a/b/b.go", "sub/go.mod", "sub/s.go", "sub/x/x.go"} {
		p := filepath.Join(root, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("package p\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d := Defect{Name: "d", File: "a/a.go", More: []Defect{{Old: "x"}, {File: "a/b/b.go"}, {File: "sub/x/x.go"}, {File: "sub/s.go"}, {File: "a/a.go"}}}
	got, err := packagesOf(root, d)
	if err != nil {
		t.Fatal(err)
	}
	want := []Package{{".", "./a"}, {".", "./a/b"}, {"sub", "./x"}, {"sub", "."}}
	if len(got) != len(want) {
		t.Fatalf("packages %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("packages %v, want %v", got, want)
		}
	}
	if _, err := packagesOf(root, Defect{Name: "m", File: "a/missing.go"}); err == nil {
		t.Fatal("a missing file was accepted")
	}
	if _, err := packagesOf(root, Defect{Name: "up", File: "../a.go"}); err == nil || !strings.Contains(err.Error(), "not a path inside the root") {
		t.Fatalf("a file outside the root: %v", err)
	}

	if err := checkInvariant(root, Defect{Name: "s", File: "sub/s.go"}); err != nil {
		t.Fatalf("a defect of another module without an invariant: %v", err)
	}
	if err := checkInvariant(root, Defect{Name: "s", File: "sub/s.go", Invariant: "x"}); err == nil {
		t.Fatal("a defect of another module with an invariant was accepted")
	}
	if err := checkInvariant(root, Defect{Name: "a", File: "a/a.go"}); err == nil || !strings.Contains(err.Error(), "no Invariant") {
		t.Fatalf("a defect of the root module without an invariant: %v", err)
	}
}
