package simbroker_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/brokerpath/brokerpath/internal/simbroker"
)

// Placing the same client order ID through two regions books one order:
// the repeat answers 200 with the existing order, and the audit shows two
// submissions and no duplicate booking.
func ExampleStart() {
	cfg := simbroker.DefaultConfig()
	cfg.TickInterval = 0 // ticks only on PublishTick: deterministic
	cfg.ClientCompID, cfg.BrokerCompID = "EXAMPLECLIENT", "EXAMPLEBROKER"
	b, err := simbroker.Start(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close()
	c := b.HTTPClient()
	defer c.CloseIdleConnections()

	place := func(region string) int {
		body := `{"client_order_id":"ex-1","symbol":"EURUSD","side":"buy","qty":"10","type":"market"}`
		req, _ := http.NewRequest("POST", b.Region(region).RESTURL()+"/v1/orders", strings.NewReader(body))
		req.Header.Set("X-API-Key", b.APIKey())
		resp, err := c.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	fmt.Println(place("eu"), place("us"))
	log := b.Audit()
	fmt.Println(len(b.Book()), log.Submissions()["ex-1"], len(log.Duplicates()), len(log.AcceptedThrough("us", time.Time{})))
	// Output:
	// 201 200
	// 1 2 0 0
}
