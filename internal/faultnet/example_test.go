package faultnet_test

import (
	"fmt"
	"io"
	"net"

	"github.com/brokerpath/brokerpath/internal/faultnet"
)

// A relay in front of a server: Down refuses dials, and clearing it serves
// again on the same address.
func ExampleRelay() {
	srv, _ := net.Listen("tcp", "127.0.0.1:0")
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, "hello\n")
			_ = c.Close()
		}
	}()

	r, err := faultnet.Listen(srv.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()

	greet := func() string {
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			return "refused"
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		return string(b[:len(b)-1])
	}
	fmt.Println(greet())
	_ = r.SetFault(faultnet.Down())
	fmt.Println(greet())
	_ = r.SetFault(faultnet.None())
	fmt.Println(greet())
	// Output:
	// hello
	// refused
	// hello
}
