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

# A check of the tree (tests/srccheck.py's command line): its self-test first, then the check,
# each one result. check SCRIPT RESULT_NAME TITLE
check() {
  suite "$3"
  if $PY "tests/$1" --self-test; then
    $PY "tests/$1" --json "$RESULTS/$2.json"
  else
    echo "{\"name\": \"$1 (self-test)\", \"result\": \"FAIL\"}" >"$RESULTS/$2.json"
  fi
}

check layers.py layers "include layers (tests/layers.py: src/ folders include downward only, no cycle)"
check funclen.py funclen "function length (tests/funclen.py: no function in src/ over 120 lines)"
check http_statuses.py http-statuses "HTTP statuses (tests/http_statuses.py: chosen in api/status.c only)"
check guide_paths.py guide-paths \
  "guide paths (tests/guide_paths.py: every path docs/internals/HACKING.md names exists)"

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
