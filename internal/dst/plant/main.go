// Command plant writes a go build overlay that re-plants named defects in
// files of the module, so that a sweep of the simulation can show it finds
// each of them; nothing in the module changes, only a build given -overlay
// sees the defects:
//
//	go run ./internal/dst/plant -defect=split-gate -gap=gosched -out=/tmp/p
//	go test -overlay=/tmp/p/overlay.json ./internal/dst -run 'TestSimSeeds$' -args -sim.seeds=1000
//
// A defect (defects.go) changes one file in one of three ways: it replaces a
// whole function or method declaration (Defect.Func, found with go/parser,
// so a defect survives edits elsewhere in the file), the lines between two
// marker comments "plant:NAME begin" and "plant:NAME end" (Defect.Marker),
// or an exact text found once (Defect.Old). The result must parse; it is
// gofmt'ed. Several defects (-defect=a,b) may be planted at once, in one or
// several files.
//
// -list names the defects with the invariant each must break and whether it
// needs the composed moves; -check plants each in memory against the current
// tree and fails naming those that no longer apply; -invariant=NAME and
// -composed=NAME print what make sim-plant needs.
//
// -gap is what replaces "{{gap}}" in a defect's replacement: none, gosched
// (runtime.Gosched(): the goroutine yields there, as a preempted one would)
// or a duration (time.Sleep: a descheduled thread, a GC stop).
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	names := flag.String("defect", "", "defects to plant, comma-separated (see -list)")
	out := flag.String("out", "", "directory for the patched files and overlay.json")
	gap := flag.String("gap", "none", "what {{gap}} becomes: none, gosched, or a duration")
	root := flag.String("root", "", "the module's root (default: the directory of the go.mod above the working directory)")
	list := flag.Bool("list", false, "list the defects")
	check := flag.Bool("check", false, "plant every defect in memory and fail naming those that no longer apply")
	inv := flag.String("invariant", "", "print the invariant defect NAME must break")
	comp := flag.String("composed", "", "print whether defect NAME needs the composed moves (true/false)")
	flag.Parse()

	switch {
	case *list:
		keys := make([]string, 0, len(defects))
		for k := range defects {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			d := defects[k]
			fmt.Printf("%-24s %-40s composed=%-5v %s: %s\n", k, d.Invariant, d.Composed, d.File, d.Doc)
		}
		return
	case *inv != "":
		d, err := lookup(*inv)
		if err != nil {
			fail("%v", err)
		}
		fmt.Println(d.Invariant)
		return
	case *comp != "":
		d, err := lookup(*comp)
		if err != nil {
			fail("%v", err)
		}
		fmt.Println(d.Composed)
		return
	}
	r, err := moduleRoot(*root)
	if err != nil {
		fail("plant: %v", err)
	}
	gapText, gapImports, err := gapOf(*gap)
	if err != nil {
		fail("plant: %v", err)
	}
	if *check {
		var bad []string
		for name, d := range defects {
			if _, err := plantFiles(r, []Defect{d}, gapText, gapImports); err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", name, err))
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			fail("plant: %d defect(s) no longer apply:\n  %s", len(bad), strings.Join(bad, "\n  "))
		}
		fmt.Printf("plant: all %d defects apply\n", len(defects))
		return
	}
	if *names == "" || *out == "" {
		fail("plant: -defect and -out are required (or -list, -check)")
	}
	var ds []Defect
	for _, n := range strings.Split(*names, ",") {
		d, err := lookup(strings.TrimSpace(n))
		if err != nil {
			fail("plant: %v", err)
		}
		ds = append(ds, d)
	}
	files, err := plantFiles(r, ds, gapText, gapImports)
	if err != nil {
		fail("plant: %v", err)
	}
	ov, err := writeOverlay(*out, files)
	if err != nil {
		fail("plant: %v", err)
	}
	fmt.Println(ov)
}

func lookup(name string) (Defect, error) {
	d, ok := defects[name]
	if !ok {
		return Defect{}, fmt.Errorf("no defect %q (go run ./internal/dst/plant -list)", name)
	}
	d.Name = name
	return d, nil
}

// gapOf is what {{gap}} becomes, and the imports it needs.
func gapOf(gap string) (string, []string, error) {
	switch gap {
	case "none", "":
		return "", nil, nil
	case "gosched":
		return "runtime.Gosched()", []string{"runtime"}, nil
	}
	d, err := time.ParseDuration(gap)
	if err != nil || d <= 0 {
		return "", nil, fmt.Errorf("-gap %q: want none, gosched or a positive duration", gap)
	}
	return fmt.Sprintf("time.Sleep(%d)", int64(d)), []string{"time"}, nil
}

// plantFiles plants ds (in order; several may change one file) and returns
// the patched files by absolute path.
func plantFiles(root string, ds []Defect, gap string, gapImports []string) (map[string][]byte, error) {
	files := map[string][]byte{}
	var all []Defect
	for _, d := range ds {
		all = append(all, d)
		for i, m := range d.More {
			m.Name = fmt.Sprintf("%s (change %d)", d.Name, i+2)
			if m.File == "" {
				m.File = d.File
			}
			all = append(all, m)
		}
	}
	for _, d := range all {
		abs := filepath.Join(root, filepath.FromSlash(d.File))
		src, ok := files[abs]
		if !ok {
			var err error
			if src, err = os.ReadFile(abs); err != nil {
				return nil, fmt.Errorf("defect %q: %w", d.Name, err)
			}
		}
		if strings.Contains(d.Body, "{{gap}}") {
			d.Imports = append(append([]string(nil), d.Imports...), gapImports...)
		}
		out, err := apply(src, d, gap)
		if err != nil {
			return nil, err
		}
		files[abs] = out
	}
	return files, nil
}

// writeOverlay writes each file under dir and dir/overlay.json, whose path
// it returns.
func writeOverlay(dir string, files map[string][]byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	replace := map[string]string{}
	for abs, b := range files {
		name := strings.ReplaceAll(strings.TrimPrefix(filepath.ToSlash(abs), "/"), "/", "__")
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return "", err
		}
		replace[abs] = p
	}
	ov, err := json.Marshal(map[string]map[string]string{"Replace": replace})
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "overlay.json")
	return p, os.WriteFile(p, ov, 0o644)
}

// moduleRoot is dir, or the nearest directory above the working directory
// with a go.mod.
func moduleRoot(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("no go.mod above the working directory (give -root)")
		}
		d = up
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", a...)
	os.Exit(2)
}
