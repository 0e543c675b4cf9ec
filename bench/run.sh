#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench: every benchmark, printed as tables (also written to bench/last-run.md).
set -euo pipefail
cd "$(dirname "$0")/.."
exec /usr/bin/python3 bench/bench.py "$@"
