//go:build !dstyield

package pathdialer

// yieldPoint marks a place where one goroutine hands state to another (a
// lock or atomic boundary of the gate, the controller or the monitor). In
// ordinary builds it does nothing and compiles to nothing; a build for the
// simulation (tag dstyield, yield_dst.go) lets its scheduler hook run there.
func yieldPoint(*Path, string) {}
