# The one test command (README quick start; .ci/run runs it too).
GO ?= go
FUZZTIME ?= 3000x
# The real agent CLIs the end-to-end tests drive, pinned (docs/agents.md).
AGENT_CLIS ?= @anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 @google/gemini-cli@0.61.0 \
	@qwen-code/qwen-code@0.24.4 opencode-ai@1.18.33 @mariozechner/pi-coding-agent@0.73.1 \
	@github/copilot@1.0.102
AGENTS_DIR ?= $(CURDIR)/.cache/agents

.PHONY: test deps vet unit e2e agents fuzz-smoke browser bench bench-steps demo

test: deps vet unit e2e fuzz-smoke browser

# What a fresh machine lacks for the tests (Node.js and npm, Chromium and
# chromedriver, the PostgreSQL server), installed with apt-get when missing.
deps:
	@./scripts/test-deps

vet:
	@test -z "$$(gofmt -l cmd internal migrations)" || { echo "gofmt needed:"; gofmt -l cmd internal migrations; exit 1; }
	$(GO) vet ./...

# The process-level tests of cmd/cadence (crash matrix and kill schedules on
# SQLite and PostgreSQL, for one run and for two runs side by side) took
# 24 minutes with -race on a quiet two-core machine: past go test's default
# 10-minute limit per package, and near 30.
unit:
	$(GO) test -race -count=1 -timeout 50m ./...

# The presets against the real agent CLIs of AGENT_CLIS (and an
# OpenAI-compatible endpoint), each pointed at a mock of its model API on
# loopback: no key, no network beyond installing the CLIs from npm. The
# cmd/cadence part passed go test's default 10 minutes with seven CLIs.
e2e: agents
	CADENCE_AGENT_BIN_DIR=$(AGENTS_DIR)/node_modules/.bin $(GO) test -count=1 -timeout 30m -tags agentcli -run 'TestAgentCLI|TestGeminiUntrustedFolder' ./cmd/cadence/ ./internal/mockmodel/

agents:
	@mkdir -p $(AGENTS_DIR)
	npm install --prefix $(AGENTS_DIR) --no-audit --no-fund --no-save --loglevel=error $(AGENT_CLIS)

# A few thousand coverage-guided executions per target on top of the seed
# corpora (which `unit` already runs as ordinary tests). A count rather than
# a duration: a time limit fails when the machine is too busy for the
# fuzzing workers to start within it.
fuzz-smoke:
	$(GO) test -run '^$$' -fuzz '^FuzzScanner$$' -fuzztime $(FUZZTIME) ./internal/handoff/extract
	$(GO) test -run '^$$' -fuzz '^FuzzRepair$$' -fuzztime $(FUZZTIME) ./internal/handoff/repair
	$(GO) test -run '^$$' -fuzz '^FuzzCheck$$' -fuzztime $(FUZZTIME) ./internal/handoff
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(FUZZTIME) ./internal/workflow
	for t in FuzzEventScanner FuzzClaudeStream FuzzCodexStream FuzzGeminiStream FuzzQwenStream FuzzOpencodeStream FuzzPiStream FuzzCopilotStream FuzzChatResponse FuzzHelpMarker; do \
		$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) ./internal/agent || exit 1; \
	done
	$(GO) test -run '^$$' -fuzz '^FuzzScenario$$' -fuzztime $(FUZZTIME) ./internal/agent/sim

# Reports opened in headless Chromium (Debian's chromium and chromium-driver,
# which .ci/run installs) through WebDriver: the demo, a map step with an
# opened circuit, hostile agent output, 10,000 attempts. Screenshots go to
# CADENCE_REPORT_ARTIFACTS; CADENCE_REPORT_SCREENSHOT=docs/report.png
# refreshes the README's.
browser:
	$(GO) vet -tags browser ./internal/report/
	$(GO) test -count=1 -tags browser -run '^TestBrowser' ./internal/report/

bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./internal/...

# Per-step cost of cadence as a user runs it, beside the floor, DBOS and
# River (issue 34; BENCHMARKS.md). Took 22 minutes on a loaded machine at the
# issue's sizes; BENCH_STEPS=100 BENCH_CHECK_STEPS=1000 BENCH_HISTORY=10000
# for a quick run. strace counts the fsyncs.
bench-steps:
	command -v strace >/dev/null || apt-get install -y strace
	cd bench && $(GO) test ./steps -run '^$$' -bench . -benchtime 1x -timeout 90m -v

demo:
	$(GO) run ./cmd/cadence run examples/demo
