package pathdialer_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/brokerpath/brokerpath/engine"
	"github.com/brokerpath/brokerpath/pathdialer"
)

// funcDoc returns the doc comment of the function name declared in file.
func funcDoc(t *testing.T, file, name string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == name && fd.Doc != nil {
			return fd.Doc.Text()
		}
	}
	t.Fatalf("%s: no documented func %s", file, name)
	return ""
}

// docValue renders v as DefaultConfig's doc writes it: durations as
// time.Duration's String without trailing zero units ("1m", not "1m0s"),
// Backoff as {Initial: …, Max: …}.
func docValue(v reflect.Value) string {
	switch x := v.Interface().(type) {
	case time.Duration:
		s := x.String()
		for _, z := range []string{"0s", "0m"} {
			if strings.HasSuffix(s, "m"+z) || strings.HasSuffix(s, "h"+z) {
				s = strings.TrimSuffix(s, z)
			}
		}
		return s
	case pathdialer.Backoff:
		return fmt.Sprintf("{Initial: %s, Max: %s}", docValue(reflect.ValueOf(x.Initial)), docValue(reflect.ValueOf(x.Max)))
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	}
	return fmt.Sprintf("%v", v.Interface())
}

// DefaultConfig's doc lists every value it sets, as it sets it: each field
// on its own line ("  - ProbeJitter: 100ms ..."), the Engine's as its
// differences from engine.DefaultConfig.
func TestDefaultConfigDocListsItsValues(t *testing.T) {
	doc := funcDoc(t, "config.go", "DefaultConfig")
	listed := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*- ([A-Z][A-Za-z]*(?:\.[A-Z][A-Za-z]*)?): (\{[^}]*\}|\S+?)[,.;]?(?:\s|$)`).FindAllStringSubmatch(doc, -1) {
		listed[m[1]] = m[2]
	}
	def := pathdialer.DefaultConfig()
	check := func(name string, v reflect.Value) {
		got, ok := listed[name]
		if !ok {
			t.Errorf("DefaultConfig sets %s to %s; its doc does not list it", name, docValue(v))
			return
		}
		if want := docValue(v); got != want {
			t.Errorf("DefaultConfig's doc says %s: %s; it is %s", name, got, want)
		}
		delete(listed, name)
	}
	v := reflect.ValueOf(def)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		if f.Name == "Engine" || v.Field(i).IsZero() {
			continue
		}
		check(f.Name, v.Field(i))
	}
	ev, base := reflect.ValueOf(def.Engine), reflect.ValueOf(engine.DefaultConfig())
	for i := range ev.NumField() {
		f := ev.Type().Field(i)
		if f.Type.Comparable() && ev.Field(i).Interface() != base.Field(i).Interface() {
			check("Engine."+f.Name, ev.Field(i))
		}
	}
	if listed["Engine"] != "engine.DefaultConfig()" {
		t.Errorf("DefaultConfig's doc does not list Engine: engine.DefaultConfig() (got %q)", listed["Engine"])
	}
	delete(listed, "Engine")
	for name, val := range listed {
		t.Errorf("DefaultConfig's doc lists %s: %s, which DefaultConfig does not set (or sets to its zero value)", name, val)
	}
}
