// Command venuetable prints the README's resting-orders table, generated from
// the shipped venue profiles, or writes it into the README between its
// markers.
//
//	go run ./venue/cmd/venuetable              # print the table
//	go run ./venue/cmd/venuetable -w README.md # rewrite the README's table
//	go run ./venue/cmd/venuetable -check README.md
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/brokerpath/brokerpath/venue/internal/venuedoc"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "venuetable:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("venuetable", flag.ContinueOnError)
	write := fs.String("w", "", "rewrite the resting-orders table in this README")
	check := fs.String("check", "", "fail if this README's resting-orders table differs from the profiles")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (flags: -w README.md, -check README.md)", fs.Arg(0))
	}
	if *write != "" && *check != "" {
		return fmt.Errorf("-w and -check are exclusive")
	}
	switch {
	case *check != "":
		b, err := os.ReadFile(*check)
		if err != nil {
			return err
		}
		return venuedoc.Check(string(b))
	case *write != "":
		b, err := os.ReadFile(*write)
		if err != nil {
			return err
		}
		updated, err := venuedoc.Splice(string(b), venuedoc.Section())
		if err != nil {
			return fmt.Errorf("%s: %w", *write, err)
		}
		if updated == string(b) {
			return nil
		}
		info, err := os.Stat(*write)
		if err != nil {
			return err
		}
		return os.WriteFile(*write, []byte(updated), info.Mode().Perm())
	}
	_, err := io.WriteString(out, venuedoc.Section())
	return err
}
