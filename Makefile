# The one test command (README quick start; .ci/run runs it too).
GO ?= go
FUZZTIME ?= 5s

.PHONY: test vet unit fuzz-smoke bench demo

test: vet unit fuzz-smoke

vet:
	@test -z "$$(gofmt -l cmd internal migrations)" || { echo "gofmt needed:"; gofmt -l cmd internal migrations; exit 1; }
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...

# A few seconds of coverage-guided fuzzing per target on top of the seed
# corpora (which `unit` already runs as ordinary tests).
fuzz-smoke:
	$(GO) test -run '^$$' -fuzz '^FuzzScanner$$' -fuzztime $(FUZZTIME) ./internal/handoff/extract
	$(GO) test -run '^$$' -fuzz '^FuzzRepair$$' -fuzztime $(FUZZTIME) ./internal/handoff/repair
	$(GO) test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) ./internal/handoff
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./internal/workflow

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/...

demo:
	$(GO) run ./cmd/cadence run examples/demo
