package observe

import "github.com/brokerpath/brokerpath/pathdialer"

// Tee returns one event hook that calls every non-nil hook in argument order,
// synchronously, with the same event. pathdialer delivers events in order from
// one goroutine, so each hook sees them in that order too; a slow hook delays the
// ones after it (and later events), never the Path. A panic in a hook is not
// recovered: it is a bug in that hook.
//
// Tee with no non-nil hook returns a hook that does nothing (never nil), so the
// result can always be assigned to pathdialer.Config.OnEvent.
func Tee(hooks ...func(pathdialer.Event)) func(pathdialer.Event) {
	var hs []func(pathdialer.Event)
	for _, h := range hooks {
		if h != nil {
			hs = append(hs, h)
		}
	}
	switch len(hs) {
	case 0:
		return func(pathdialer.Event) {}
	case 1:
		return hs[0]
	}
	return func(e pathdialer.Event) {
		for _, h := range hs {
			h(e)
		}
	}
}
