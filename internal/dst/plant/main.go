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
// needs the composed moves; -names prints their names alone, one a line;
// -check plants each in memory against the current tree and fails naming
// those that no longer apply; -invariant=NAME and -composed=NAME print what
// make sim-plant needs; -packages=NAME prints the packages the defect
// changes, one a line as "MODULE PACKAGE" (the module's directory from the
// root, "." for this one, and the package's directory from the module's,
// "./pathdialer"), what make mutants runs the tests of.
//
// A defect may change a file of another module under the root (coord/etcd):
// the simulation does not build it, so it has no invariant (-invariant fails
// saying so) and its tests are its only measure.
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
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	defectNames := flag.String("defect", "", "defects to plant, comma-separated (see -list)")
	out := flag.String("out", "", "directory for the patched files and overlay.json")
	gap := flag.String("gap", "none", "what {{gap}} becomes: none, gosched, or a duration")
	root := flag.String("root", "", "the module's root (default: the directory of the go.mod above the working directory)")
	list := flag.Bool("list", false, "list the defects")
	check := flag.Bool("check", false, "plant every defect in memory and fail naming those that no longer apply")
	compile := flag.Bool("compile", false, "with -check: also compile each defect's packages and their tests with it planted (go test -run '^$' -overlay), naming those that do not")
	inv := flag.String("invariant", "", "print the invariant defect NAME must break")
	comp := flag.String("composed", "", "print whether defect NAME needs the composed moves (true/false)")
	names := flag.Bool("names", false, "print the defects' names, one a line")
	pkgs := flag.String("packages", "", `print the packages defect NAME changes, one a line: "MODULE PACKAGE" (directories from the root, and from the module)`)
	flag.Parse()

	switch {
	case *list:
		for _, k := range sortedNames() {
			d := defects[k]
			in := d.Invariant
			if in == "" {
				in = "-"
			}
			fmt.Printf("%-24s %-40s composed=%-5v %s: %s\n", k, in, d.Composed, d.File, d.Doc)
		}
		return
	case *names:
		for _, k := range sortedNames() {
			fmt.Println(k)
		}
		return
	case *inv != "":
		d, err := lookup(*inv)
		if err != nil {
			fail("%v", err)
		}
		if d.Invariant == "" {
			fail("plant: defect %q has no invariant: %s is outside the module the simulation builds; its measure is its module's tests (make mutants, unit layer)", d.Name, d.File)
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
	if *pkgs != "" {
		d, err := lookup(*pkgs)
		if err != nil {
			fail("plant: %v", err)
		}
		ps, err := packagesOf(r, d)
		if err != nil {
			fail("plant: %v", err)
		}
		for _, p := range ps {
			fmt.Println(p.Module, p.Dir)
		}
		return
	}
	gapText, gapImports, err := gapOf(*gap)
	if err != nil {
		fail("plant: %v", err)
	}
	if *check {
		var bad []string
		for name := range defects {
			d, _ := lookup(name)
			if _, err := plantFiles(r, []Defect{d}, gapText, gapImports); err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			if err := checkInvariant(r, d); err != nil {
				bad = append(bad, fmt.Sprintf("%s: %v", name, err))
				continue
			}
			if *compile {
				if err := compileDefect(r, d, gapText, gapImports); err != nil {
					bad = append(bad, fmt.Sprintf("%s: %v", name, err))
				}
			}
		}
		sort.Strings(bad)
		if len(bad) > 0 {
			fail("plant: %d defect(s) no longer apply:\n  %s", len(bad), strings.Join(bad, "\n  "))
		}
		if *compile {
			fmt.Printf("plant: all %d defects apply and compile\n", len(defects))
			return
		}
		fmt.Printf("plant: all %d defects apply\n", len(defects))
		return
	}
	if *defectNames == "" || *out == "" {
		fail("plant: -defect and -out are required (or -list, -check)")
	}
	var ds []Defect
	for _, n := range strings.Split(*defectNames, ",") {
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

func sortedNames() []string {
	keys := make([]string, 0, len(defects))
	for k := range defects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Package is a package a defect changes: Module is its module's directory
// from the root ("." for the root's module), Dir its directory from the
// module's ("./pathdialer", or "." for the module's own root package).
type Package struct{ Module, Dir string }

// packagesOf lists the packages d changes (its File's and those of More), in
// order, each once.
func packagesOf(root string, d Defect) ([]Package, error) {
	files := []string{d.File}
	for _, m := range d.More {
		if m.File != "" {
			files = append(files, m.File)
		}
	}
	var out []Package
	seen := map[Package]bool{}
	for _, f := range files {
		p, err := packageOf(root, f)
		if err != nil {
			return nil, fmt.Errorf("defect %q: %w", d.Name, err)
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out, nil
}

// packageOf is the package of file (a path from root): its module is the
// nearest directory at or above the file's, up to root, with a go.mod.
func packageOf(root, file string) (Package, error) {
	dir := filepath.Dir(filepath.FromSlash(file))
	if filepath.IsAbs(dir) || dir == ".." || strings.HasPrefix(dir, ".."+string(filepath.Separator)) {
		return Package{}, fmt.Errorf("file %q is not a path inside the root", file)
	}
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
		return Package{}, err
	}
	for mod := dir; ; mod = filepath.Dir(mod) {
		if _, err := os.Stat(filepath.Join(root, mod, "go.mod")); err == nil {
			rel, err := filepath.Rel(mod, dir)
			if err != nil {
				return Package{}, err
			}
			pkg := "."
			if rel != "." {
				pkg = "./" + filepath.ToSlash(rel)
			}
			return Package{Module: filepath.ToSlash(mod), Dir: pkg}, nil
		}
		if mod == "." {
			return Package{}, fmt.Errorf("no go.mod at or above %s under %s", dir, root)
		}
	}
}

// compileDefect builds the packages d changes, and their tests, with d
// planted (go test -run '^$' -vet=off -overlay, in each package's module):
// a defect whose text still matches can still fail to compile when code it
// calls changed.
func compileDefect(root string, d Defect, gap string, gapImports []string) error {
	files, err := plantFiles(root, []Defect{d}, gap, gapImports)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "plant-compile-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ov, err := writeOverlay(dir, files)
	if err != nil {
		return err
	}
	ps, err := packagesOf(root, d)
	if err != nil {
		return err
	}
	for _, p := range ps {
		cmd := exec.Command("go", "test", "-count=1", "-run", "^$", "-vet=off", "-overlay="+ov, p.Dir)
		cmd.Dir = filepath.Join(root, filepath.FromSlash(p.Module))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("does not compile in %s/%s: %v\n%s", p.Module, p.Dir, err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// checkInvariant: a defect in the module the simulation builds names the
// invariant its sweep must break; one in another module names none.
func checkInvariant(root string, d Defect) error {
	ps, err := packagesOf(root, d)
	if err != nil {
		return err
	}
	inRoot := false
	for _, p := range ps {
		inRoot = inRoot || p.Module == "."
	}
	switch {
	case inRoot && d.Invariant == "":
		return fmt.Errorf("no Invariant: %s is in the module the simulation builds", d.File)
	case !inRoot && d.Invariant != "":
		return fmt.Errorf("Invariant %q, but %s is outside the module the simulation builds (no sweep can break it)", d.Invariant, d.File)
	}
	return nil
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
