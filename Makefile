# brokerpath make targets. `make test` is what CI runs (.ci/run) and what the README names.
GO      ?= go
PKGS    ?= ./...
GOFILES  = $(shell git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './vendor/*')

.PHONY: test fmt-check vet unit bench lint

## test: gofmt check, go vet, and the whole suite under the race detector.
test: fmt-check vet unit

fmt-check:
	@out="$$(gofmt -l $(GOFILES))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

unit:
	$(GO) test -race -count=1 -timeout 9m $(PKGS)

## bench: every benchmark, allocations reported, no unit tests.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count=1 $(PKGS)

## lint: gofmt, go vet, and staticcheck-style checks that ship with the toolchain.
lint: fmt-check vet
	$(GO) mod verify

# --- observe ---
# status-screenshot: serve the status page for a Path on the simulated broker
# (region eu taken down after 2 s, so the page shows a failover), take a headless
# Chromium screenshot into reports/status.png and check it is non-trivial.
# NOT part of `make test`: it installs Debian's chromium with apt-get when it is
# missing, which needs root and network access to the apt mirrors.
STATUS_PNG     ?= reports/status.png
STATUS_MIN_KB  ?= 20
CHROMIUM       ?= chromium

.PHONY: status-screenshot
status-screenshot:
	@command -v $(CHROMIUM) >/dev/null 2>&1 || { \
	  echo "status-screenshot: installing chromium (needs root and apt)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; }
	@mkdir -p reports
	@rm -f $(STATUS_PNG)
	$(GO) build -o reports/statusdemo ./observe/status/cmd/statusdemo
	@set -e; tmp=$$(mktemp -d); \
	reports/statusdemo -addr 127.0.0.1:0 -outage 2s -for 60s -url-file $$tmp/url >$$tmp/demo.log 2>&1 & pid=$$!; \
	trap 'kill $$pid 2>/dev/null; wait $$pid 2>/dev/null; rm -rf $$tmp' EXIT; \
	for i in $$(seq 1 100); do [ -s $$tmp/url ] && break; kill -0 $$pid || { cat $$tmp/demo.log; exit 1; }; sleep 0.1; done; \
	url=$$(cat $$tmp/url); echo "status-screenshot: $$url (waiting for the failover)"; \
	for i in $$(seq 1 100); do curl -fsS "$${url}status.json" | grep -q '"generation": 1' && break; sleep 0.1; done; \
	$(CHROMIUM) --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
	  --disable-background-networking --disable-component-update --disable-sync \
	  --user-data-dir=$$tmp/profile --screenshot=$(STATUS_PNG) --window-size=1200,900 "$$url" >$$tmp/chromium.log 2>&1 \
	  || { cat $$tmp/chromium.log; exit 1; }; \
	size=$$(stat -c %s $(STATUS_PNG) 2>/dev/null || echo 0); \
	if [ "$$size" -lt $$(( $(STATUS_MIN_KB) * 1024 )) ]; then \
	  echo "status-screenshot: $(STATUS_PNG) is $$size bytes (< $(STATUS_MIN_KB) KB)"; exit 1; fi; \
	echo "status-screenshot: $(STATUS_PNG) ($$size bytes)"
# --- end observe ---
