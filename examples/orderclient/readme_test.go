package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's sentence on the demo's faults names every fault -fault
// accepts, the default included.
func TestREADMEListsEveryFault(t *testing.T) {
	var usage bytes.Buffer
	if _, err := parse([]string{"-h"}, &usage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parse(-h) = %v, want flag.ErrHelp", err)
	}
	m := regexp.MustCompile(`-fault string\s+outage of the primary region: ([a-z0-9, -]+?) \(default "([a-z]+)"\)`).FindStringSubmatch(usage.String())
	if m == nil {
		t.Fatalf("no -fault usage line in:\n%s", usage.String())
	}
	faults := strings.Split(m[1], ", ")
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "`-fault")
	if i < 0 {
		t.Fatal("README.md: no sentence on the demo's -fault")
	}
	// The parenthesis around the first mention.
	sentence := text[strings.LastIndex(text[:i], "("):]
	sentence = sentence[:strings.Index(sentence, ")")]
	if !strings.Contains(sentence, "`-fault\n"+m[2]+"`, the default") && !strings.Contains(sentence, "`-fault "+m[2]+"`, the default") {
		t.Errorf("README.md's -fault sentence does not name the default %q: %q", m[2], sentence)
	}
	for _, f := range faults {
		if !regexp.MustCompile(`[\s|` + "`" + `]` + regexp.QuoteMeta(f) + `[|` + "`" + `]`).MatchString(sentence) {
			t.Errorf("README.md's -fault sentence omits %q: %q", f, sentence)
		}
	}
	if len(faults) < 8 {
		t.Fatalf("only %d faults parsed from the usage (%v): the test proves little", len(faults), faults)
	}
}
