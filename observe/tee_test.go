package observe_test

import (
	"fmt"
	"slices"
	"testing"

	"go.uber.org/goleak"

	"github.com/brokerpath/brokerpath/observe"
	"github.com/brokerpath/brokerpath/pathdialer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestTeeCallsEveryHookInOrder(t *testing.T) {
	var got []string
	hook := func(name string) func(pathdialer.Event) {
		return func(e pathdialer.Event) { got = append(got, name+":"+e.Kind.String()) }
	}
	tee := observe.Tee(hook("a"), nil, hook("b"))
	tee(pathdialer.Event{Kind: pathdialer.EventSwitch})
	tee(pathdialer.Event{Kind: pathdialer.EventHalt})
	want := []string{"a:switch", "b:switch", "a:halt", "b:halt"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestTeeOfNothingIsANoOp(t *testing.T) {
	for _, tee := range []func(pathdialer.Event){observe.Tee(), observe.Tee(nil, nil)} {
		if tee == nil {
			t.Fatal("Tee returned nil")
		}
		tee(pathdialer.Event{Kind: pathdialer.EventProbe}) // must not panic
	}
}

func ExampleTee() {
	var n int
	count := func(pathdialer.Event) { n++ }
	cfg := pathdialer.DefaultConfig()
	cfg.OnEvent = observe.Tee(count, count)
	cfg.OnEvent(pathdialer.Event{Kind: pathdialer.EventSwitch})
	fmt.Println(n)
	// Output: 2
}
