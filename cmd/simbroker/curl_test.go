package main

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// printedCommands returns the shell commands the start-up output offers to
// paste: every line that starts with curl or export, joined with the lines
// it continues onto (a trailing backslash).
func printedCommands(text string) []string {
	var cmds []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "curl ") && !strings.HasPrefix(l, "export ") {
			continue
		}
		cmd := l
		for strings.HasSuffix(cmd, `\`) && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		cmds = append(cmds, cmd)
	}
	return cmds
}

var urlRE = regexp.MustCompile(`https?://[^\s']+`)

// Every curl line simbroker prints runs as pasted into a shell: one command,
// one URL, and it succeeds (the lines use --fail-with-body, so an HTTP error
// fails the command), for the default broker and for a strict one.
func TestPrintedCurlLinesRunAsPasted(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("this test executes the printed curl lines: %v", err)
	}
	for _, flags := range [][]string{
		{},
		{"-dedup", "none", "-fence", "enforced", "-tokens", "checked"},
	} {
		t.Run(strings.Join(append([]string{"default"}, flags...), " "), func(t *testing.T) {
			client, broker := uniqueCompIDs()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var out, errOut syncBuffer
			done := make(chan error, 1)
			go func() {
				done <- run(ctx, append([]string{"-tick", "0", "-client-compid", client, "-broker-compid", broker}, flags...), &out, &errOut)
			}()
			deadline := time.Now().Add(10 * time.Second)
			for !strings.Contains(out.String(), "Ctrl-C") {
				if time.Now().After(deadline) {
					t.Fatalf("no endpoint listing; stdout %q stderr %q", out.String(), errOut.String())
				}
				select {
				case err := <-done:
					t.Fatalf("run returned early: %v (stderr %q)", err, errOut.String())
				case <-time.After(5 * time.Millisecond):
				}
			}
			cmds := printedCommands(out.String())
			curls := 0
			for _, c := range cmds {
				if !strings.HasPrefix(c, "curl ") {
					continue
				}
				curls++
				if n := len(urlRE.FindAllString(c, -1)); n != 1 {
					t.Errorf("printed line calls %d URLs, want one command per line:\n%s", n, c)
					continue
				}
				if !strings.Contains(c, "--fail-with-body") {
					t.Errorf("printed line does not fail on an HTTP error (--fail-with-body):\n%s", c)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				got, err := exec.CommandContext(ctx, "sh", "-c", c).CombinedOutput()
				cancel()
				if err != nil {
					t.Errorf("printed line fails when pasted: %v\n%s\noutput: %s", err, c, got)
				}
			}
			if curls < 10 {
				t.Errorf("%d curl lines printed, want the order, probe and admin lines:\n%s", curls, out.String())
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("run: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("run did not stop after cancel")
			}
		})
	}
}
