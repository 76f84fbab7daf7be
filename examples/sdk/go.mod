module github.com/brokerpath/brokerpath/examples/sdk

go 1.26.0

replace github.com/brokerpath/brokerpath => ../..

require (
	github.com/adshao/go-binance/v2 v2.8.7
	github.com/alpacahq/alpaca-trade-api-go/v3 v3.9.1
	github.com/brokerpath/brokerpath v0.0.0-00010101000000-000000000000
	github.com/shopspring/decimal v1.4.0
)

require (
	cloud.google.com/go v0.118.0 // indirect
	github.com/bitly/go-simplejson v0.5.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/josharian/intern v1.0.0 // indirect
	github.com/jpillora/backoff v1.0.0 // indirect
	github.com/mailru/easyjson v0.7.7 // indirect
	github.com/pires/go-proxyproto v0.7.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/quagmt/udecimal v1.8.0 // indirect
	github.com/quickfixgo/quickfix v0.9.10 // indirect
	github.com/rogpeppe/go-internal v1.9.0 // indirect
	github.com/sony/gobreaker/v2 v2.4.0 // indirect
	golang.org/x/net v0.62.0 // indirect
)
