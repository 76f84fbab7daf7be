//go:build dstyield

package pathdialer

import "sync"

// This file exists only in builds with the dstyield tag, made for the
// deterministic simulation (internal/dst): a hook chosen by the simulation
// runs at every yield point of a Path, where it may yield the processor
// (runtime.Gosched), so that goroutines that hand state to each other
// interleave between their steps as they would on a preempting, loaded host.

// yieldHooks maps a *Path to its hook (func(site string)). A map rather than
// a field keeps the Path's layout the same in every build.
var yieldHooks sync.Map

// SetYieldHook installs hook, called at each of p's yield points with the
// point's name, before p starts (a nil hook removes it; do so once p is
// closed). Only builds with the dstyield tag have it.
func SetYieldHook(p *Path, hook func(site string)) {
	if hook == nil {
		yieldHooks.Delete(p)
		return
	}
	yieldHooks.Store(p, hook)
}

func yieldPoint(p *Path, site string) {
	if h, ok := yieldHooks.Load(p); ok {
		h.(func(string))(site)
	}
}
