package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
)

// Defect is one defect the tool can plant: a change to one file of the
// module, made in exactly one of three ways.
type Defect struct {
	Name string
	// File is the file's path from the module's root (pathdialer/gate.go).
	File string
	// Doc says what the defect is, in a line or two.
	Doc string
	// Invariant is what a sweep with the defect planted must break
	// (make sim-plant succeeds when a seed breaks it). Empty exactly when
	// File is in another module under the root (coord/etcd), which the
	// simulation does not build: its tests are then its only measure.
	Invariant string
	// Composed: the sweep needs the composed moves (-sim.composed).
	Composed bool

	// Func names a function or method to replace with Body, the whole
	// declaration: "observe", "Path.Report" or "(*Path).Report" (the
	// receiver's pointer does not matter).
	Func string
	// Marker names a region of File between a line containing
	// "plant:<Marker> begin" and one containing "plant:<Marker> end"
	// (comments); the lines between them are replaced with Body, the
	// marker lines are kept.
	Marker string
	// Old is an exact text that File contains once, replaced with Body.
	Old string

	// Body is the replacement. "{{gap}}" in it is replaced with what the
	// -gap flag asks for (nothing, runtime.Gosched(), or time.Sleep(d)).
	Body string
	// Imports the replacement needs, added when File lacks them.
	Imports []string

	// More are further changes the defect needs (a field, a call's
	// arguments, the file of another package), each made like this one,
	// after it; a change whose File is empty is to the defect's File.
	More []Defect
}

// kind says which way d changes its file, or why it is malformed.
func (d Defect) kind() (string, error) {
	n := 0
	k := ""
	for _, c := range []struct {
		set  bool
		name string
	}{{d.Func != "", "func"}, {d.Marker != "", "marker"}, {d.Old != "", "text"}} {
		if c.set {
			n++
			k = c.name
		}
	}
	if n != 1 {
		return "", fmt.Errorf("defect %q: set exactly one of Func, Marker and Old (%d set)", d.Name, n)
	}
	if d.File == "" {
		return "", fmt.Errorf("defect %q: File is empty", d.Name)
	}
	return k, nil
}

// apply returns src with d planted, gofmt'ed; gap is what {{gap}} becomes.
func apply(src []byte, d Defect, gap string) ([]byte, error) {
	k, err := d.kind()
	if err != nil {
		return nil, err
	}
	body := strings.ReplaceAll(d.Body, "{{gap}}", gap)
	var out []byte
	switch k {
	case "text":
		if c := bytes.Count(src, []byte(d.Old)); c != 1 {
			return nil, fmt.Errorf("defect %q: %s contains the text to replace %d times, want once (the code changed: update the defect)", d.Name, d.File, c)
		}
		out = bytes.Replace(src, []byte(d.Old), []byte(body), 1)
	case "marker":
		out, err = replaceMarked(src, d, body)
	case "func":
		out, err = replaceFunc(src, d, body)
	}
	if err != nil {
		return nil, err
	}
	if out, err = addImports(out, d.Imports); err != nil {
		return nil, fmt.Errorf("defect %q: %w", d.Name, err)
	}
	f, err := format.Source(out)
	if err != nil {
		return nil, fmt.Errorf("defect %q: the planted %s does not parse: %w", d.Name, d.File, err)
	}
	return f, nil
}

func replaceMarked(src []byte, d Defect, body string) ([]byte, error) {
	lines := strings.SplitAfter(string(src), "\n")
	begin, end := -1, -1
	for i, l := range lines {
		switch {
		case strings.Contains(l, "plant:"+d.Marker+" begin"):
			if begin >= 0 {
				return nil, fmt.Errorf("defect %q: %s has two begin markers plant:%s", d.Name, d.File, d.Marker)
			}
			begin = i
		case strings.Contains(l, "plant:"+d.Marker+" end"):
			if end >= 0 {
				return nil, fmt.Errorf("defect %q: %s has two end markers plant:%s", d.Name, d.File, d.Marker)
			}
			end = i
		}
	}
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("defect %q: %s has no region marked plant:%s begin … plant:%s end", d.Name, d.File, d.Marker, d.Marker)
	}
	if body != "" && !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	var b strings.Builder
	for _, l := range lines[:begin+1] {
		b.WriteString(l)
	}
	b.WriteString(body)
	for _, l := range lines[end:] {
		b.WriteString(l)
	}
	return []byte(b.String()), nil
}

// funcName is how a declaration is named in Defect.Func: "name" or
// "Recv.name" (the receiver's base type, without its pointer or type
// parameters).
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		}
		break
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fd.Name.Name
	}
	return fd.Name.Name
}

func normFunc(s string) string {
	s = strings.ReplaceAll(s, "(*", "")
	s = strings.ReplaceAll(s, "(", "")
	s = strings.ReplaceAll(s, ")", "")
	return strings.TrimPrefix(s, "*")
}

func replaceFunc(src []byte, d Defect, body string) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, d.File, src, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("defect %q: %w", d.Name, err)
	}
	want := normFunc(d.Func)
	var found *ast.FuncDecl
	for _, decl := range f.Decls {
		if fd, ok := decl.(*ast.FuncDecl); ok && funcName(fd) == want {
			if found != nil {
				return nil, fmt.Errorf("defect %q: %s declares %s twice", d.Name, d.File, d.Func)
			}
			found = fd
		}
	}
	if found == nil {
		return nil, fmt.Errorf("defect %q: %s declares no %s (the code changed: update the defect)", d.Name, d.File, d.Func)
	}
	// From the func keyword to the closing brace; the doc comment stays.
	start, end := fset.Position(found.Pos()).Offset, fset.Position(found.End()).Offset
	var b bytes.Buffer
	b.Write(src[:start])
	b.WriteString(strings.TrimSpace(body))
	b.Write(src[end:])
	return b.Bytes(), nil
}

// addImports adds the paths src does not import yet.
func addImports(src []byte, paths []string) ([]byte, error) {
	if len(paths) == 0 {
		return src, nil
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, im := range f.Imports {
		p, _ := strconv.Unquote(im.Path.Value)
		have[p] = true
	}
	var add strings.Builder
	for _, p := range paths {
		if !have[p] {
			fmt.Fprintf(&add, "\t%q\n", p)
		}
	}
	if add.Len() == 0 {
		return src, nil
	}
	s := string(src)
	if i := strings.Index(s, "import (\n"); i >= 0 {
		i += len("import (\n")
		return []byte(s[:i] + add.String() + s[i:]), nil
	}
	// No import block: add one after the package clause.
	pkgEnd := fset.Position(f.Name.End()).Offset
	return []byte(s[:pkgEnd] + "\n\nimport (\n" + add.String() + ")\n" + s[pkgEnd:]), nil
}
