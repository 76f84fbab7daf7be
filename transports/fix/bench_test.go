package fix_test

import (
	"testing"

	"github.com/quickfixgo/quickfix"

	"github.com/brokerpath/brokerpath/transports/fix"
)

func BenchmarkFateOf(b *testing.B) {
	m := quickfix.NewMessage()
	m.Header.SetString(35, "8")
	m.Body.SetString(11, "c1")
	m.Body.SetString(39, "2")
	m.Body.SetString(37, "o1")
	b.ReportAllocs()
	for b.Loop() {
		if f, _ := fix.FateOf(m); f == 0 {
			b.Fatal("undetermined")
		}
	}
}
