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
