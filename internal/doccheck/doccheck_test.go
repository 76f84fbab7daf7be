// Package doccheck checks the "Start here" section that opens every public
// package's documentation: it comes first, it is short, and its code is
// compiled code, taken line for line from the package's test files; and
// every public package has an Example.
package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The public packages, relative to the repository root (coord/etcd is a
// module of its own; its files are read from here all the same).
var publicPackages = []string{
	"pathdialer",
	"engine",
	"engine/enginetest",
	"transports/rest",
	"transports/ws",
	"transports/fix",
	"venue",
	"observe",
	"observe/metrics",
	"observe/status",
	"observe/drill",
	"coord/etcd",
}

const (
	maxStartHereWords = 300
	// maxPreambleWords bounds what comes before "# Start here": a synopsis.
	maxPreambleWords = 80
)

func TestStartHere(t *testing.T) {
	for _, pkg := range publicPackages {
		t.Run(pkg, func(t *testing.T) {
			dir := filepath.Join("..", "..", filepath.FromSlash(pkg))
			doc, err := packageDoc(filepath.Join(dir, "doc.go"))
			if err != nil {
				t.Fatal(err)
			}
			section, err := startHere(doc)
			if err != nil {
				t.Fatalf("%s/doc.go: %v", pkg, err)
			}
			if n := len(strings.Fields(strings.Join(preamble(doc), "\n"))); n > maxPreambleWords {
				t.Errorf("%s: %d words come before Start here, want at most %d", pkg, n, maxPreambleWords)
			}
			if n := len(strings.Fields(strings.Join(section, "\n"))); n > maxStartHereWords {
				t.Errorf("%s: the Start here section has %d words, want at most %d", pkg, n, maxStartHereWords)
			}
			code := codeLines(section)
			if len(code) == 0 {
				t.Fatalf("%s: the Start here section has no code block", pkg)
			}
			files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
			if err != nil {
				t.Fatal(err)
			}
			hasExample := false
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				hasExample = hasExample || strings.Contains(string(b), "\nfunc Example")
			}
			if !hasExample {
				t.Errorf("%s: no Example function", pkg)
			}
			// The file that holds the longest leading part of the block is
			// the one the block was taken from.
			bestFile, bestMatched := "", -1
			for _, f := range files {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				n := matched(code, trimmedLines(string(b)))
				if n == len(code) {
					return
				}
				if n > bestMatched {
					bestFile, bestMatched = filepath.Base(f), n
				}
			}
			if bestFile == "" {
				t.Fatalf("%s: no test file holds an Example", pkg)
			}
			t.Errorf("%s: the Start here code is not, line for line and in order, in one of the package's test files (closest: %s, which lacks %q)",
				pkg, bestFile, code[bestMatched])
		})
	}
}

// packageDoc returns the package comment of a doc.go file, without the
// comment markers.
func packageDoc(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "package ") {
			break
		}
		if !strings.HasPrefix(l, "//") {
			doc = doc[:0] // a comment not attached to the package clause
			continue
		}
		l = strings.TrimPrefix(l, "//")
		l = strings.TrimPrefix(l, " ")
		doc = append(doc, l)
	}
	return doc, nil
}

// startHere returns the lines of the "# Start here" section, which must be
// the doc's first heading.
func startHere(doc []string) ([]string, error) {
	start := -1
	for i, l := range doc {
		if strings.HasPrefix(l, "# ") {
			if l != "# Start here" {
				return nil, errorf("the first heading is %q, want \"# Start here\"", l)
			}
			start = i + 1
			break
		}
	}
	if start < 0 {
		return nil, errorf("no \"# Start here\" heading")
	}
	end := len(doc)
	for i := start; i < len(doc); i++ {
		if strings.HasPrefix(doc[i], "# ") {
			end = i
			break
		}
	}
	return doc[start:end], nil
}

// preamble returns the lines before the first heading.
func preamble(doc []string) []string {
	for i, l := range doc {
		if strings.HasPrefix(l, "# ") {
			return doc[:i]
		}
	}
	return doc
}

// codeLines returns the code block lines (indented in the doc), trimmed.
func codeLines(section []string) []string {
	var code []string
	for _, l := range section {
		if strings.HasPrefix(l, "\t") {
			if l = strings.TrimSpace(l); l != "" {
				code = append(code, l)
			}
		}
	}
	return code
}

func trimmedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		out = append(out, strings.TrimSpace(l))
	}
	return out
}

// matched returns how many leading lines of want occur in have, in order.
func matched(want, have []string) int {
	j := 0
	for i, w := range want {
		for j < len(have) && have[j] != w {
			j++
		}
		if j == len(have) {
			return i
		}
		j++
	}
	return len(want)
}

func errorf(format string, args ...any) error {
	return fmt.Errorf(format, args...)
}
