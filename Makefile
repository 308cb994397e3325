# Ferrite — the two commands of the README, and a few helpers.
#   make demo   the tour: a real process killed and recovered, a crash
#               campaign, a benchmark table with plots (builds only what the
#               tour needs: the `ferrite` tool, the examples, the libraries)
#   make test   the full test suite (builds everything)
JOBS ?= $(shell nproc)
PRESET ?= release

.PHONY: demo test setup configure build asan tsan test-asan test-tsan install clean

setup:
	@bash scripts/setup.sh

# The presets build with Ninja (it compiles a test's files while the
# libraries it links are still compiling, where Make waits for each target
# to finish: measured below). A build directory configured by an older
# checkout for Make is reconfigured, not refused: CMake will not switch the
# generator of an existing cache.
fresh_generator = @if [ -f build/$(1)/CMakeCache.txt ] && \
  ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$$' build/$(1)/CMakeCache.txt; then \
  echo "make: build/$(1) was configured for another generator; reconfiguring it for Ninja" >&2; \
  rm -rf build/$(1)/CMakeCache.txt build/$(1)/CMakeFiles; fi

configure: setup
	$(call fresh_generator,$(PRESET))
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

demo: configure
	@cmake --build --preset $(PRESET) -j $(JOBS) --target tour
	./build/$(PRESET)/ferrite demo

# A fresh build directory gets ctest's cost data from tests/ctest-costs.txt,
# so `ctest -j` starts the slowest tests first instead of ending on one of
# them while the other cores idle (later runs keep ctest's own measurements).
seed_costs = @mkdir -p build/$(1)/Testing/Temporary && \
  { test -f build/$(1)/Testing/Temporary/CTestCostData.txt || \
    grep -v '^\#' tests/ctest-costs.txt > build/$(1)/Testing/Temporary/CTestCostData.txt; }

test: build
	$(call seed_costs,$(PRESET))
	ctest --preset $(PRESET) -j $(JOBS)

# ASan+UBSan: every test, at FERRITE_TEST_SCALE=0.1 (the preset). Tests that
# cannot run under ASan skip themselves (tests/common/sanitizer.h). The
# preset's ASAN_OPTIONS keep a 4 MiB quarantine (default 256) and 10-frame
# allocation stacks (default 30): crash campaigns fork a worker per campaign
# and a child per recovery crash, and every page the quarantine's recycling
# touches in a forked process is a copy-on-write fault (a page fault and a
# TLB flush, costly under a hypervisor); use-after-free of a block freed
# within the last 4 MiB of frees is still caught. Measured on one campaign
# test (PBCorrectVariants, 8 campaigns): 16 MiB -> 4 MiB took its page
# faults from 360k to 211k and its CPU time from 36-42 s to 27-32 s.
asan: setup
	$(call fresh_generator,asan)
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)

test-asan: asan
	$(call seed_costs,asan)
	ctest --preset asan -j $(JOBS)

# TSan: the tests labelled tsan (stress, and the unit tests of sync, pmem and
# baselines; CMakeLists.txt), built and run alone.
tsan: setup
	$(call fresh_generator,tsan)
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS) --target tests_tsan

test-tsan: tsan
	$(call seed_costs,tsan)
	ctest --preset tsan -j $(JOBS)

install: build
	cmake --install build/$(PRESET) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf build
