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

configure: setup
	@cmake --preset $(PRESET) >/dev/null

build: configure
	@cmake --build --preset $(PRESET) -j $(JOBS)

demo: configure
	@cmake --build --preset $(PRESET) -j $(JOBS) --target tour
	./build/$(PRESET)/ferrite demo

test: build
	ctest --preset $(PRESET) -j $(JOBS)

# ASan+UBSan: every test, at FERRITE_TEST_SCALE=0.1 (the preset). Tests that
# cannot run under ASan skip themselves (tests/common/sanitizer.h).
asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)

test-asan: asan
	ctest --preset asan -j $(JOBS)

# TSan: the tests labelled tsan (stress, and the unit tests of sync, pmem and
# baselines; CMakeLists.txt), built and run alone.
tsan: setup
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS) --target tests_tsan

test-tsan: tsan
	ctest --preset tsan -j $(JOBS)

install: build
	cmake --install build/$(PRESET) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf build
