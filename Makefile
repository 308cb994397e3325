# Ferrite — the two commands of the README, and a few helpers.
#   make demo   the tour: a real process killed and recovered, a crash
#               campaign, a benchmark table with plots
#   make test   the full test suite
JOBS ?= $(shell nproc)
PRESET ?= release

.PHONY: demo test setup build asan tsan test-asan test-tsan install clean

setup:
	@bash scripts/setup.sh

build: setup
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET) -j $(JOBS)

demo: build
	./build/$(PRESET)/ferrite demo

test: build
	ctest --preset $(PRESET) -j $(JOBS)

asan: setup
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)

test-asan: asan
	ctest --preset asan -j $(JOBS)

tsan: setup
	@cmake --preset tsan >/dev/null
	@cmake --build --preset tsan -j $(JOBS)

test-tsan: tsan
	ctest --preset tsan -j $(JOBS)

install: build
	cmake --install build/$(PRESET) --prefix $(or $(PREFIX),/usr/local)

clean:
	rm -rf build
