#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Every test suite of sandboxd, ending with one summary line:
#   N passed, N failed, N skipped
# Suites: the include direction of src/ (tests/layers.py), the length of its functions
# (tests/funclen.py), where HTTP statuses are chosen (tests/http_statuses.py), the paths of
# docs/internals/HACKING.md (tests/guide_paths.py), C unit tests
# (release build, ASan/UBSan build, valgrind), every libFuzzer target for a few seconds
# (FUZZ_TEST_SECONDS, default 4), end-to-end tests against a real `sandboxd serve` (ASan build),
# the attack suite as root and again as an unprivileged user (rootless mode), the deployment
# files (container image, Kubernetes), and a real cgroup v2 host (a VM).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=/usr/bin/python3
RESULTS=$(mktemp -d /tmp/sandboxd-results.XXXXXX)
chmod 755 "$RESULTS"
trap 'rm -rf "$RESULTS"' EXIT

suite() { echo; echo "=== $* ==="; }

suite "test peers (npm: MCP servers and clients, Node 22)"
( cd tests/node &&
  if ! cmp -s package-lock.json node_modules/.sandboxd-lock 2>/dev/null; then
    npm ci --no-audit --no-fund --loglevel=error && cp package-lock.json node_modules/.sandboxd-lock
  fi ) || echo "npm ci failed: the tests that need MCP peers will fail"

suite "format (clang-format)"
if clang-format --dry-run --Werror $(git ls-files 'src/*.c' 'src/*.h' 'tests/*.c' 'fuzz/*.c' 'fuzz/*.h') \
  2>"$RESULTS/format.txt"; then
  echo '{"name": "clang-format", "result": "OK"}' >"$RESULTS/format.json"
else
  cat "$RESULTS/format.txt" | head -20
  echo '{"name": "clang-format", "result": "FAIL"}' >"$RESULTS/format.json"
fi

suite "lint (pyflakes: the runtime, tests, benchmarks)"
if $PY -m pyflakes runtime tests/*.py tests/e2e/*.py tests/e2e/mcp tests/attacks tests/deploy tests/cgroup2 \
  bench fuzz >"$RESULTS/pyflakes.txt" 2>&1; then
  echo '{"name": "pyflakes", "result": "OK"}' >"$RESULTS/pyflakes.json"
else
  head -20 "$RESULTS/pyflakes.txt"
  echo '{"name": "pyflakes", "result": "FAIL"}' >"$RESULTS/pyflakes.json"
fi

suite "include layers (tests/layers.py: src/ folders include downward only, no cycle)"
if $PY tests/layers.py --self-test; then
  $PY tests/layers.py --json "$RESULTS/layers.json"
else
  echo '{"name": "include layers (self-test)", "result": "FAIL"}' >"$RESULTS/layers.json"
fi

suite "function length (tests/funclen.py: no function in src/ over 120 lines)"
if $PY tests/funclen.py --self-test; then
  $PY tests/funclen.py --json "$RESULTS/funclen.json"
else
  echo '{"name": "function length (self-test)", "result": "FAIL"}' >"$RESULTS/funclen.json"
fi

suite "HTTP statuses (tests/http_statuses.py: chosen in api/status.c only)"
if $PY tests/http_statuses.py --self-test; then
  $PY tests/http_statuses.py --json "$RESULTS/http-statuses.json"
else
  echo '{"name": "HTTP statuses (self-test)", "result": "FAIL"}' >"$RESULTS/http-statuses.json"
fi

suite "guide paths (tests/guide_paths.py: every path docs/internals/HACKING.md names exists)"
if $PY tests/guide_paths.py --self-test; then
  $PY tests/guide_paths.py --json "$RESULTS/guide-paths.json"
else
  echo '{"name": "guide paths (self-test)", "result": "FAIL"}' >"$RESULTS/guide-paths.json"
fi

# stale logs of an earlier run must not be counted
rm -f build/meson-logs/testlog*.json build-asan/meson-logs/testlog*.json

suite "unit tests (release)"
meson test -C build --print-errorlogs --no-rebuild
cp build/meson-logs/testlog.json "$RESULTS/unit-release.json" 2>/dev/null

suite "unit tests (ASan + UBSan)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  meson test -C build-asan --print-errorlogs --no-rebuild
cp build-asan/meson-logs/testlog.json "$RESULTS/unit-asan.json" 2>/dev/null

suite "unit tests (valgrind)"
meson test -C build --print-errorlogs --no-rebuild \
  --wrap='valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite'
cp build/meson-logs/testlog-valgrind.json "$RESULTS/unit-valgrind.json" 2>/dev/null

suite "fuzz targets (libFuzzer, ${FUZZ_TEST_SECONDS:-4} s each; make fuzz runs them longer)"
fuzz/run.sh --json "$RESULTS/fuzz.json" "${FUZZ_TEST_SECONDS:-4}"

suite "end-to-end (sandboxd serve, ASan build)"
SANDBOXD_BIN=$ROOT/build-asan/sandboxd SANDBOXD_CELL_LIB=$ROOT/build/libsbxcell.so \
  $PY -m pytest -q -p no:cacheprovider tests/e2e --junitxml="$RESULTS/e2e.xml"

suite "attacks (root)"
SANDBOXD_BIN=$ROOT/build/sandboxd $PY -m pytest -q -p no:cacheprovider tests/attacks \
  --junitxml="$RESULTS/attacks-root.xml"

suite "attacks (unprivileged user, rootless)"
tests/rootless.sh "$RESULTS/attacks-rootless.xml"

suite "deployment (make image, the container under podman, Kubernetes manifests)"
$PY -m pytest -q -p no:cacheprovider tests/deploy --junitxml="$RESULTS/deploy.xml"

suite "cgroup v2 (a Debian 12 VM booted for it: tests/cgroup2/run.sh)"
tests/cgroup2/run.sh "$RESULTS"

$PY tests/summary.py "$RESULTS"
