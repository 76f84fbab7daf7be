package main

import (
	"context"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// childEnv makes the test binary run the program's main instead of the
// tests: the quick start then runs as its own process, configured only by
// the environment, as a reader runs it.
const childEnv = "BROKERPATH_QUICKSTART_REST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

var outputRE = regexp.MustCompile(`^order (qs-\d+) 201 Created\n$`)

// The quick start runs against the simulated two-region broker (speaking
// Alpaca's paths and headers), twice: each run books one order, exactly
// once, through the primary, under a client order ID of its own.
func TestQuickStartRESTRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sim, err := simbroker.Start(ctx, simbroker.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	var urls []string
	for _, r := range sim.Regions() {
		urls = append(urls, r.RESTURL())
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for range 2 {
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=1", "BROKER_URLS="+strings.Join(urls, " "), "SSL_CERT_FILE="+sim.CAFile(),
			"APCA_API_KEY_ID=quickstart", "APCA_API_SECRET_KEY="+sim.APIKey())
		out, err := cmd.Output()
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("quick start: %v\nstdout:\n%s\nstderr:\n%s", err, out, stderr)
		}
		m := outputRE.FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("output %q, want it to match %s", out, outputRE)
		}
		ids[m[1]] = true
	}
	if len(ids) != 2 {
		t.Fatalf("the two runs used the client order IDs %v, want two different ones", ids)
	}
	for id := range ids {
		o, ok := sim.Order(id)
		if !ok {
			t.Errorf("the broker has no order %s", id)
			continue
		}
		if o.Region != sim.Regions()[0].Name() || o.Service != "rest" {
			t.Errorf("order %s: region %q service %q, want booked through %s over rest", id, o.Region, o.Service, sim.Regions()[0].Name())
		}
	}
	if n := len(sim.Book()); n != 2 {
		t.Errorf("the broker booked %d orders, want 2", n)
	}
}

// Without the broker's addresses the program stops with an error saying
// what is wrong, and books nothing.
func TestQuickStartRESTWithoutURLsFails(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "BROKER_URLS=")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the quick start without BROKER_URLS succeeded: %s", out)
	}
	if !strings.Contains(string(out), "endpoint") {
		t.Errorf("the quick start without BROKER_URLS said %q, want an error about the missing endpoints", out)
	}
}

// readmeMarker precedes the README's REST-only quick start block.
const readmeMarker = "<!-- quick start: examples/quickstart-rest/main.go -->"

// Limits of the REST-only quick start: the program's code after its
// imports, in lines, and the brokerpath names it uses (distinct exported
// identifiers of brokerpath packages: pathdialer.New, rest.Probe, …).
const maxCodeLines, maxBrokerpathNames = 40, 15

// The README's REST-only quick start is this program, byte for byte, and it
// stays short.
func TestREADMEShowsQuickStartREST(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), readmeMarker+"\n```go\n")
	if !ok {
		t.Fatalf("README.md has no %q line followed by a ```go block", readmeMarker)
	}
	block, _, ok := strings.Cut(after, "\n```\n")
	if !ok {
		t.Fatal("README.md's REST-only quick start block is not closed")
	}
	if block+"\n" != string(src) {
		t.Errorf("README.md's REST-only quick start differs from examples/quickstart-rest/main.go: %s\ncopy the file into the README block after %q",
			firstDiff(block+"\n", string(src)), readmeMarker)
	}
	lines, names, err := measure(string(src))
	if err != nil {
		t.Fatal(err)
	}
	if lines > maxCodeLines {
		t.Errorf("the quick start has %d lines of code after its imports, want at most %d", lines, maxCodeLines)
	}
	if len(names) > maxBrokerpathNames {
		t.Errorf("the quick start names %d brokerpath identifiers (%v), want at most %d", len(names), names, maxBrokerpathNames)
	}
	t.Logf("%d lines in all, %d after the imports; %d brokerpath names: %v", strings.Count(string(src), "\n"), lines, len(names), names)
}

// measure returns the lines after the import block and the distinct
// brokerpath package-qualified names (pkg.Name) the source uses.
func measure(src string) (lines int, names []string, err error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "main.go", src, 0)
	if err != nil {
		return 0, nil, err
	}
	bp := map[string]bool{}
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if strings.HasPrefix(p, "github.com/brokerpath/brokerpath/") {
			bp[p[strings.LastIndex(p, "/")+1:]] = true
		}
	}
	seen := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && bp[id.Name] && id.Obj == nil {
				if k := id.Name + "." + sel.Sel.Name; !seen[k] {
					seen[k] = true
					names = append(names, k)
				}
			}
		}
		return true
	})
	last := f.Imports[len(f.Imports)-1]
	importsEnd := fset.Position(last.End()).Line + 1 // the closing parenthesis
	return fset.Position(f.End()).Line - importsEnd, names, nil
}

// firstDiff names the first line where a and b differ.
func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d:\n  README: %q\n  file:   %q", i+1, x, y)
		}
	}
	return "trailing newline"
}
