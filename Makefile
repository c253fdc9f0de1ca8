# Thin wrappers over CMake. `make run` and `make test` install what is missing
# first (scripts/deps.sh), so each works on a fresh Debian machine.
JOBS ?= $(shell nproc)
# ctest runs one test more than there are cores: most integration tests spend part
# of their time waiting (a scrape interval, a server starting, a browser), and a
# third test keeps two cores busy through the waits. Every test passes beside
# others on a loaded machine.
TEST_JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
BUILD_DEV := build/dev
BUILD_REL := build/release

.PHONY: all deps build run demo test bench fuzz clean

all: build

deps:
	@./scripts/deps.sh

# the daemon only: `make bench` builds the benchmarks in the same folder
build: deps
	@cmake -S . -B $(BUILD_REL) -DCMAKE_BUILD_TYPE=Release -DPD_TESTS=OFF >/dev/null
	@cmake --build $(BUILD_REL) -j $(JOBS) --target profd

# `make run PROFD_LISTEN=127.0.0.1:19400 PROFD_DATA=/tmp/d` and the other settings
# described at the top of scripts/run.sh reach it as environment variables.
run: build
	@./scripts/run.sh $(BUILD_REL)/profd

# the demo Go program alone, in the foreground: `make demo DEMO_ARGS=-addr=127.0.0.1:6061`
# (it needs only Go: scripts/deps.sh runs when Go is missing)
demo:
	@command -v go >/dev/null || ./scripts/deps.sh
	@mkdir -p build
	@cd examples/demo-go && GOFLAGS=-mod=mod GOPROXY=off go build -o ../../build/demo-go .
	@./build/demo-go $(DEMO_ARGS)

# A build folder without ctest's cost data gets tests/ctest-costs.txt (each
# test's seconds in a make test on a 2-core machine), so that ctest -j starts the
# longest tests first on a clean clone too; ctest keeps it up to date after.
COSTS := $(BUILD_DEV)/Testing/Temporary/CTestCostData.txt
SEED_COSTS := { [ -f $(COSTS) ] || { mkdir -p $(dir $(COSTS)) && cp tests/ctest-costs.txt $(COSTS); }; }

# The optimised build warns about things the debug build does not see. `make test`
# ends with its wall time, and that of each step (deps, dev build, release
# build, tests), pass or fail. The release build compiles through ccache
# (installed by deps.sh --test) into build/ccache, when build/release is configured
# here for the first time: the tests that build profd again in a fresh copy
# (integration_first_run, integration_dockerfile) take its objects from that cache
# (PD_CCACHE_DIR, tests/support/ccache.sh). CMake keeps the launcher in that
# folder's cache, so a later `make build` there compiles through ccache too (into
# ccache's own folder, ~/.cache/ccache); `make clean` starts afresh.
test:
	@t0=$$(date +%s); t=$$t0; steps=; rc=0; \
	step() { n=$$(date +%s); steps="$$steps $$1 $$((n - t)) s,"; t=$$n; }; \
	{ ./scripts/deps.sh --test && step deps && \
	cmake -S . -B $(BUILD_DEV) -DCMAKE_BUILD_TYPE=Debug -DPD_SANITIZE=ON -DPD_FUZZ=ON \
		-DCMAKE_EXPORT_COMPILE_COMMANDS=ON >/dev/null && \
	cmake --build $(BUILD_DEV) -j $(JOBS) && step dev-build && \
	{ ! command -v ccache >/dev/null || { export PD_CCACHE_DIR=$(CURDIR)/build/ccache \
		CCACHE_DIR=$(CURDIR)/build/ccache CCACHE_BASEDIR=$(CURDIR) \
		CMAKE_C_COMPILER_LAUNCHER=ccache CMAKE_CXX_COMPILER_LAUNCHER=ccache; }; } && \
	cmake -S . -B $(BUILD_REL) -DCMAKE_BUILD_TYPE=Release -DPD_TESTS=OFF >/dev/null && \
	cmake --build $(BUILD_REL) -j $(JOBS) --target profd && step release-build && \
	unset CMAKE_C_COMPILER_LAUNCHER CMAKE_CXX_COMPILER_LAUNCHER CCACHE_DIR CCACHE_BASEDIR && \
	$(SEED_COSTS) && (cd $(BUILD_DEV) && ctest --output-on-failure -j $(TEST_JOBS)) && step tests; } || { rc=$$?; step failed; }; \
	e=$$(( $$(date +%s) - t0 )); steps=$${steps# }; \
	echo "make test: $$([ $$rc = 0 ] && echo passed || echo FAILED) in $$((e / 60)) min $$((e % 60)) s ($${steps%,})"; \
	exit $$rc

# every fuzz target for FUZZ_SECONDS each (default 600), after replaying its
# regression inputs; `make test` replays the seeds and fuzzes each for 1-2 s. Inputs found go to
# build/fuzz/tests/fuzz/fuzz_<target>.work/, crashes to its artifacts/.
FUZZ_SECONDS ?= 600
fuzz:
	@./scripts/deps.sh --test
	@cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=Debug -DPD_SANITIZE=ON -DPD_FUZZ=ON \
		-DPD_FUZZ_OPT=-O1 \
		-DPD_FUZZ_SECONDS=$(FUZZ_SECONDS) -DPD_FUZZ_SECONDS_EACH=$(FUZZ_SECONDS) >/dev/null
	@cmake --build build/fuzz -j $(JOBS)
	@cd build/fuzz && ctest -L fuzz --output-on-failure -j $(JOBS)

# the benchmarks run the servers and the browser the tests use: deps.sh --test
bench:
	@./scripts/deps.sh --test
	@cmake -S . -B $(BUILD_REL) -DCMAKE_BUILD_TYPE=Release -DPD_TESTS=OFF >/dev/null
	@cmake --build $(BUILD_REL) -j $(JOBS)
	@./bench/tsdb.sh $(BUILD_REL)
	@./bench/decode.sh $(BUILD_REL)
	@./bench/scrape.sh $(BUILD_REL)
	@./bench/daemon.sh $(BUILD_REL)
	@./bench/api.sh $(BUILD_REL)
	@./bench/ingest.sh $(BUILD_REL)
	@./bench/run.sh $(BUILD_REL)/profd
	@./bench/selfprof.sh $(BUILD_REL)
	@./bench/ui.sh $(BUILD_REL)
	@./bench/ui_pages.sh $(BUILD_REL)
	@./bench/soak.sh $(BUILD_REL)
	@./bench/tls.sh $(BUILD_REL)/profd
	@./bench/clickhouse.sh $(BUILD_REL)
	@./bench/symbolize.sh $(BUILD_REL)
	@./bench/querier.sh $(BUILD_REL)

clean:
	rm -rf build
