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
