//go:build !dstyield

package dst

// YieldPoints is false in ordinary builds: the Path's yield points do
// nothing (build with -tags dstyield, as make sim does, to have them yield).
const YieldPoints = false

type yielder struct{}

func (w *world) installYield() {}
func (w *world) removeYield()  {}
func (w *world) yields() int   { return 0 }
