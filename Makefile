# Folio's front door. `make run` runs the main job, `make test` the tests.
# Both install missing Debian 12 packages first (idempotent).

JOBS ?= $(shell nproc)
CACHE ?= 1G
# kernel:4k beside kernel: the first finding measured on the kernel's own page cache too.
ENGINES ?= limit,kernel,kernel:4k,folio:4k,folio:fixed:64k,folio:dynamic
BENCH_ARGS ?=
RESYNC_ARGS ?= --model hdd --size 128M
FS_BENCH_ARGS ?=

.PHONY: all deps release debug tsan run test test-debug test-tsan test-arm64 fuzz bench clean

all: release

deps:
	@scripts/install-deps.sh

build/release/build.ninja: | deps
	cmake --preset release >/dev/null

build/debug/build.ninja: | deps
	cmake --preset debug >/dev/null

build/tsan/build.ninja: | deps
	cmake --preset tsan >/dev/null

release: deps build/release/build.ninja
	cmake --preset release >/dev/null
	ninja -C build/release -j$(JOBS) folio

debug: deps build/debug/build.ninja
	cmake --preset debug >/dev/null
	ninja -C build/debug -j$(JOBS)

tsan: deps build/tsan/build.ninja
	cmake --preset tsan >/dev/null
	ninja -C build/tsan -j$(JOBS) concurrency_tests

# The main job: Folio's three findings in turn, each printing its table (README, "make run"):
#   1. the large-folio experiment, every engine side by side on a temp file
#   2. the md raid5 stripe-unit experiment: a RAID 5 resynced at each stripe unit, its members
#      behind the spinning-disk latency model
#   3. Folio FS (SQLite metadata, a dir: store) against ext4 and passthrough_ll
run: release
	@echo "== 1/3 the large-folio experiment: folio bench bench/seed-large-folio.fio"
	build/release/folio bench --cache $(CACHE) --engine $(ENGINES) $(BENCH_ARGS) bench/seed-large-folio.fio
	@echo "== 2/3 RAID 5 resync per stripe unit: folio raid resync-bench"
	build/release/folio raid resync-bench $(RESYNC_ARGS)
	@echo "== 3/3 Folio FS against ext4 and passthrough_ll: folio fs bench"
	build/release/folio fs bench $(FS_BENCH_ARGS)

test: deps
	$(MAKE) test-debug
	$(MAKE) test-tsan
	$(MAKE) fuzz

test-debug: debug
	ctest --test-dir build/debug --output-on-failure -j$(JOBS) -LE slow --timeout 600

test-tsan: tsan
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	  ctest --test-dir build/tsan --output-on-failure -j$(JOBS) -L concurrency --timeout 900

fuzz: deps
	scripts/run-fuzzers.sh

# Folio as an aarch64 program: cross-compiled (preset arm64), every test of the default run but
# the FUSE mounts under qemu-user, twice (-cpu max and -cpu cortex-a53), the model tests shortened
# (cmake/qemu-aarch64.sh). Installs its own packages (scripts/install-deps.sh --arm64). CI runs
# it after `make test` (.ci/run); docs/cpu-dispatch.md has what it runs and its cost.
test-arm64:
	JOBS=$(JOBS) scripts/test-arm64.sh

clean:
	rm -rf build
