module github.com/brokerpath/brokerpath/bench

go 1.26.0

require (
	github.com/brokerpath/brokerpath v0.0.0
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/gorilla/websocket v1.5.3
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/quickfixgo/quickfix v0.9.10
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/influxdata/tdigest v0.0.1 // indirect
	github.com/pires/go-proxyproto v0.7.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/quagmt/udecimal v1.8.0 // indirect
	github.com/quickfixgo/enum v0.1.0 // indirect
	github.com/quickfixgo/field v0.1.0 // indirect
	github.com/quickfixgo/fix44 v0.1.0 // indirect
	github.com/quickfixgo/tag v0.1.0 // indirect
	github.com/shopspring/decimal v1.4.0 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	golang.org/x/net v0.62.0 // indirect
)

replace github.com/brokerpath/brokerpath => ../
