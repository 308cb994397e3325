#!/usr/bin/env bash
# Installs a configured Ferrite build tree into a temporary prefix and builds
# a consumer project with find_package(ferrite) — a small program and the
# guide's programs (examples/kv_service.cc, durable_queue.cc), then kills the
# out-of-tree kv-service 100 times per engine. Usage: test-install.sh BUILD_DIR
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/tests/install_consumer" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
  -DFERRITE_EXAMPLES_DIR="$src/examples" >/dev/null
cmake --build "$tmp/build" -j 2 >/dev/null
"$tmp/build/consumer"
# The key-value service built out of the tree, killed 100 times per engine
# by the same test as the in-tree one (when this build has that test).
if [ -x "$build/test_examples_process" ]; then
  FERRITE_KV_SERVICE="$tmp/build/kv-service" "$build/test_examples_process" --gtest_filter='KvService.*' >/dev/null
  echo "test-install: the out-of-tree kv-service survived the kill tests"
fi
