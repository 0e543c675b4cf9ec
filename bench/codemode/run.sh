#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# make bench-codemode: tokens in a model's context, direct tool calling against code mode
# (bench/codemode/bench.mjs, docs/PERFORMANCE.md). Needs the npm packages of tests/node.
set -euo pipefail
cd "$(dirname "$0")/../.."
NODE=tests/node/node_modules/.bin/node
if [ ! -x "$NODE" ] || [ ! -d tests/node/node_modules/gpt-tokenizer ]; then
    (cd tests/node && npm ci --no-audit --no-fund >/dev/null)
fi
exec "$NODE" bench/codemode/bench.mjs "$@"
