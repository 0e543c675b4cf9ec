#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Run the libFuzzer targets of build-fuzz/ (make build-fuzz) for SECONDS each, one after the
# other: first over the checked-in corpus (fuzz/corpus/<target>: seeds and regression inputs),
# then fuzzing, keeping what it learns in build-fuzz/corpus/<target>. Fails when any target
# finds anything: a crash, a sanitizer report (ASan, UBSan, LeakSanitizer), a violated property,
# an input that runs over 10 s, or memory over 2 GiB. The input is kept in build-fuzz/findings/.
#
#   fuzz/run.sh [--json FILE] [SECONDS [TARGET...]]     (make fuzz FUZZ_SECONDS=N)
#
# --json appends one line per target, {"name", "result": "OK"|"FAIL", "executions"}, for
# tests/summary.py.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_FUZZ:-build-fuzz}
json=
if [[ ${1:-} == --json ]]; then
  json=$2
  shift 2
fi
seconds=${1:-60}
shift || true
targets=("$@")
if [[ ${#targets[@]} -eq 0 ]]; then
  for t in "$BUILD"/fuzz/fuzz_*; do
    [[ -x $t && -f $t ]] && targets+=("${t##*/fuzz_}")
  done
fi
if [[ ${#targets[@]} -eq 0 ]]; then
  echo "fuzz: no targets in $BUILD/fuzz (run make build-fuzz)" >&2
  exit 2
fi

# Dictionaries a target uses (fuzz/dict/<part>.dict, concatenated).
dict_parts() {
  case $1 in
    request) echo json request ;;
    frame) echo json frame ;;
    mcp_server) echo json mcp ;;
    mcp_config) echo json config ;;
    yaml | workflow | template) echo yaml workflow ;;
    sse) echo sse ;;
    e2b) echo json e2b ;;
    alias) echo alias json ;;
    *) echo json ;;
  esac
}

mkdir -p "$BUILD/findings" "$BUILD/dict" "$BUILD/logs"
failed=0
for t in "${targets[@]}"; do
  bin=$BUILD/fuzz/fuzz_$t
  if [[ ! -x $bin ]]; then
    echo "fuzz_$t: no such target" >&2
    failed=1
    [[ -n $json ]] && echo "{\"name\": \"fuzz_$t\", \"result\": \"FAIL\"}" >>"$json"
    continue
  fi
  dict=$BUILD/dict/$t.dict
  : >"$dict"
  for part in $(dict_parts "$t"); do cat "fuzz/dict/$part.dict" >>"$dict"; done
  work=$BUILD/corpus/$t
  mkdir -p "$work" "fuzz/corpus/$t"
  log=$BUILD/logs/$t.log
  start=$(date +%s)
  UBSAN_OPTIONS=print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=2 \
    -print_final_stats=1 -dict="$dict" -artifact_prefix="$BUILD/findings/$t-" \
    "$work" "fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  took=$(($(date +%s) - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(ls "$work" | wc -l)
  if [[ $rc -eq 0 ]]; then
    printf 'fuzz_%-11s OK    %10s executions in %3d s, corpus %d\n' "$t" "${execs:-?}" "$took" "$corpus"
    [[ -n $json ]] && echo "{\"name\": \"fuzz_$t\", \"result\": \"OK\", \"executions\": ${execs:-0}}" >>"$json"
  else
    failed=1
    printf 'fuzz_%-11s FAIL  (exit %d) after %d s; log %s\n' "$t" "$rc" "$took" "$log"
    grep -E 'property violated|ERROR:|SUMMARY:|^    #[0-9]+ .* in [a-z_]+ /' "$log" | head -25
    artifact=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$log" | tail -1)
    [[ -n $artifact ]] && echo "  input: $artifact (reproduce: $bin $artifact)"
    [[ -n $json ]] && echo "{\"name\": \"fuzz_$t\", \"result\": \"FAIL\"}" >>"$json"
  fi
done
exit $failed
