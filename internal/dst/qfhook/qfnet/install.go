//go:build dstfix

package qfnet

import (
	"sync"

	"github.com/quickfixgo/quickfix"
)

var installed sync.Once

// Install makes quickfix use the registry: acceptors take the listeners
// Serve registered, initiators dial Pipe listeners. It needs the overlay of
// internal/dst/qfhook (quickfix.SetSimNet exists only there).
func Install() {
	installed.Do(func() { quickfix.SetSimNet(Listen, Dial) })
}
