//go:build !dstyield

package dst

import "time"

// descheduleController needs the Path's yield points (builds with -tags
// dstyield); without them it never stops the controller.
func (w *world) descheduleController(time.Duration) (asleep <-chan struct{}, cancel func()) {
	return make(chan struct{}), func() {}
}
