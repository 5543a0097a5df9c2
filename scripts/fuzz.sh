#!/usr/bin/env bash
# Builds and runs the libFuzzer targets of fuzz/ (clang, ASan + UBSan; docs/CORRECTNESS.md).
#   scripts/fuzz.sh [TARGET|all] [SECONDS]   fuzz each target SECONDS (default 60), starting from
#                                            fuzz/corpus/TARGET; new inputs go to a corpus outside
#                                            the repo ($FASA_FUZZ_DIR, default ~/.cache/fasa/fuzz)
#   scripts/fuzz.sh --merge [TARGET|all]     merge that corpus back into fuzz/corpus/TARGET
#                                            (only inputs that add coverage; commit them)
#   scripts/fuzz.sh --test TARGET            the ctest Fuzz.TARGET: the committed corpus, then
#                                            $FASA_FUZZ_TEST_SECONDS (20) of fuzzing from seed 1
#   scripts/fuzz.sh --build                  only (re)build build-fuzz (scripts/setup.sh runs it)
#   scripts/fuzz.sh --seeds                  rewrite the valid seeds of fuzz/corpus/ (make_seeds.cpp)
#   scripts/fuzz.sh --list                   the target names
# A crash, sanitizer report or broken property exits non-zero; the input is kept under
# $FASA_FUZZ_DIR/artifacts/ (reproduce: build-fuzz/fuzz/fasa_fuzz_TARGET FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build="$root/build-fuzz"
fuzz_dir="${FASA_FUZZ_DIR:-${FASA_HOME:-$HOME/.cache/fasa}/fuzz}"

targets() { for f in fuzz/*_fuzz.cpp; do basename "$f" _fuzz.cpp; done; }

die() { echo "fuzz: $*" >&2; exit 1; }

# Builds build-fuzz once at a time (ctest may start several Fuzz.* tests together).
build_fuzz() {
  if ! command -v clang++ >/dev/null; then
    echo "fuzz: clang++ not found (scripts/setup.sh installs clang and libclang-rt-14-dev)" >&2
    [ "${1:-}" = test ] && [ "${FASA_REQUIRE_MODEL:-0}" != "1" ] && exit 77
    exit 1
  fi
  mkdir -p "$build"
  exec 9>"$build/.lock"
  flock 9
  if [ ! -f "$build/CMakeCache.txt" ]; then
    # Debug: FASA_DCHECK and library assertions on; fuzz/CMakeLists.txt adds -O1.
    cmake -S . -B "$build" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug -DFASA_FUZZ=ON \
      >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; die "configure failed"; }
  fi
  cmake --build "$build" -j"$(nproc)" >"$build/build.log" 2>&1 ||
    { tail -40 "$build/build.log" >&2; die "build failed (log: $build/build.log)"; }
  flock -u 9
}

binary() {
  local b="$build/fuzz/fasa_fuzz_$1"
  [ -x "$b" ] || die "no fuzz target '$1' (targets: $(targets | tr '\n' ' '))"
  echo "$b"
}

# libFuzzer flags per target: input size limit, dictionary.
flags() {
  local t=$1 max_len=4096
  case $t in gguf) max_len=16384 ;; calibration) max_len=8192 ;; esac
  # Exit 1 on any finding (libFuzzer's default, 77, is ctest's "skipped").
  echo "-max_len=$max_len -timeout=10 -error_exitcode=1 -timeout_exitcode=1 -print_final_stats=1"
  [ -f "fuzz/dict/$t.dict" ] && echo "-dict=fuzz/dict/$t.dict"
  return 0
}

# "N execs (E/s), cov C, ft F, corpus K" from a libFuzzer log.
summary() {
  local log=$1 execs rate last
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1 |
         sed -E 's/.*cov: ([0-9]+) ft: ([0-9]+) corp: ([0-9]+).*/cov \1, ft \2, corpus \3/')
  echo "${execs:-?} execs (${rate:-?}/s), ${last:-no coverage line}"
}

# run TARGET SECONDS CORPUS_DIR [extra libFuzzer flags...]: fuzz, keep crashes, print a summary.
run_target() {
  local t=$1 secs=$2 corpus=$3 bin log rc=0
  shift 3
  bin=$(binary "$t")
  mkdir -p "$corpus" "$fuzz_dir/artifacts"
  log=$(mktemp)
  # shellcheck disable=SC2046
  "$bin" $(flags "$t") -max_total_time="$secs" -artifact_prefix="$fuzz_dir/artifacts/$t-" \
    "$@" "$corpus" "fuzz/corpus/$t" >"$log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    tail -60 "$log" >&2
    echo "fuzz: $t FAILED (exit $rc); input kept in $fuzz_dir/artifacts/ (the line 'Test unit" \
         "written to' above names it)" >&2
  else
    echo "fuzz: $t: $(summary "$log")"
  fi
  rm -f "$log"
  [ $rc -eq 0 ] || return 1
}

case "${1:-all}" in
  --build)
    build_fuzz ;;
  --list)
    targets ;;
  --seeds)
    build_fuzz
    "$build/fuzz/fasa_fuzz_seeds" fuzz/corpus
    echo "fuzz: seeds written to fuzz/corpus/" ;;
  --test)
    [ $# -eq 2 ] || die "usage: scripts/fuzz.sh --test TARGET"
    build_fuzz test
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    run_target "$2" "${FASA_FUZZ_TEST_SECONDS:-20}" "$work" -seed=1 ;;
  --merge)
    build_fuzz
    for t in $( [ "${2:-all}" = all ] && targets || echo "$2"); do
      [ -d "$fuzz_dir/$t" ] || { echo "fuzz: $t: no corpus at $fuzz_dir/$t"; continue; }
      before=$(ls "fuzz/corpus/$t" | wc -l)
      # shellcheck disable=SC2046
      "$(binary "$t")" $(flags "$t") -merge=1 "fuzz/corpus/$t" "$fuzz_dir/$t" >/dev/null 2>&1
      echo "fuzz: $t: fuzz/corpus/$t: $before -> $(ls "fuzz/corpus/$t" | wc -l) files"
    done ;;
  -*)
    die "unknown option $1 (see the comment at the top of scripts/fuzz.sh)" ;;
  *)
    build_fuzz
    secs="${2:-60}"
    status=0
    for t in $( [ "$1" = all ] && targets || echo "$1"); do
      run_target "$t" "$secs" "$fuzz_dir/$t" || status=1
    done
    exit $status ;;
esac
