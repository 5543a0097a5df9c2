#!/usr/bin/env bash
# Builds llama.cpp's own llama-bench (once) from the llama.cpp vendored in the pinned
# llama-cpp-python sdist, then runs bench/compare_llamacpp.py (standard library only), which
# alternates `fasa bench` and `llama-bench -fa 0` / `-fa 1` repetition by repetition.
# Development-time only: the engine never depends on it. Arguments go to the driver, e.g.
#   bench/compare_llamacpp.sh --fasa ./build/fasa -m MODEL.gguf -t 2 -p 512 -n 128 -d 0,4096 -r 3
#
# Cache: ${FASA_HOME:-~/.cache/fasa}/llamacpp-bench/ holds the sdist, its unpacked copy, the
# build (build-<flags hash>/), build.log and the stamp (stamp.json: sdist sha256, cmake flags,
# `llama-bench --version`). The build is redone only when the stamp's sdist or flags differ.
# Environment:
#   FASA_LLAMACPP_SDIST  an already downloaded sdist .tar.gz to use instead of `pip download`
#   FASA_LLAMACPP_SRC    an already unpacked sdist folder (development; the sdist sha256 is then
#                        that of FASA_LLAMACPP_SDIST if given, else recorded as "unknown")
#   FASA_LLAMACPP_JOBS   build jobs (default 2)
#   FASA_LLAMACPP_ISA    avx512 (default: AVX-512 with VNNI, BF16, VBMI) or avx2 (AVX2, FMA and
#                        F16C only: the yardstick for fasa's FASA_ISA=avx2 path); each its own build
#   FASA_LLAMA_BENCH     use this llama-bench binary and skip download and build altogether
#                        (its stamp is then what `--version` prints; flags "unknown")
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
VERSION=0.3.36
CACHE=${FASA_HOME:-$HOME/.cache/fasa}/llamacpp-bench
JOBS=${FASA_LLAMACPP_JOBS:-2}
PY=${PYTHON:-python3}
die() { echo "fasa compare_llamacpp: error: $*" >&2; exit 1; }

# AVX-512 with VNNI, BF16 and VBMI, no AMX: llama.cpp's AMX path dies in `ldtilecfg` on these
# VMs (the kernel does not grant the tile state). Not native: the flags are recorded as given.
case ${FASA_LLAMACPP_ISA:-avx512} in
  avx512) ISA_FLAGS=(-DGGML_AVX512=ON -DGGML_AVX512_VNNI=ON -DGGML_AVX512_BF16=ON
                     -DGGML_AVX512_VBMI=ON) ;;
  avx2) ISA_FLAGS=(-DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF
                   -DGGML_AVX512_VBMI=OFF -DGGML_AVX_VNNI=OFF) ;;
  *) die "FASA_LLAMACPP_ISA=${FASA_LLAMACPP_ISA}: use avx512 or avx2" ;;
esac
CMAKE_FLAGS=(
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
  -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON "${ISA_FLAGS[@]}"
  -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_OPENMP=ON
  -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_BUILD_TOOLS=ON
)
# (LLAMA_CURL is gone from this llama.cpp: its CMakeLists only warns that it is ignored.)

if [ -n "${FASA_LLAMA_BENCH:-}" ]; then
  [ -x "$FASA_LLAMA_BENCH" ] || die "FASA_LLAMA_BENCH=$FASA_LLAMA_BENCH is not an executable"
  BIN=$FASA_LLAMA_BENCH
  STAMP=$CACHE/stamp-external.json
  mkdir -p "$CACHE"
  "$PY" "$HERE/compare_llamacpp.py" --write-stamp "$STAMP" --stamp-bin "$BIN" \
      --stamp-sha256 unknown --stamp-flags unknown
  exec "$PY" "$HERE/compare_llamacpp.py" --llama-bench "$BIN" --stamp "$STAMP" "$@"
fi

command -v cmake >/dev/null || die "cmake not found (needed to build llama-bench)"
mkdir -p "$CACHE"

# 1. the sources
SHA=unknown
if [ -n "${FASA_LLAMACPP_SDIST:-}" ]; then
  [ -f "$FASA_LLAMACPP_SDIST" ] || die "FASA_LLAMACPP_SDIST=$FASA_LLAMACPP_SDIST: no such file"
  SDIST=$FASA_LLAMACPP_SDIST
elif [ -z "${FASA_LLAMACPP_SRC:-}" ]; then
  SDIST=$CACHE/llama_cpp_python-$VERSION.tar.gz
  if [ ! -f "$SDIST" ]; then
    echo "fasa: downloading the llama-cpp-python $VERSION sdist into $CACHE" >&2
    "$PY" -m pip download --quiet --no-binary :all: --no-deps "llama-cpp-python==$VERSION" \
        -d "$CACHE" || die "pip download of llama-cpp-python==$VERSION failed"
    [ -f "$SDIST" ] || die "pip download did not leave $SDIST"
  fi
fi
[ -n "${SDIST:-}" ] && SHA=$(sha256sum "$SDIST" | cut -d' ' -f1)
if [ -n "${FASA_LLAMACPP_SRC:-}" ]; then
  SRC=$FASA_LLAMACPP_SRC
else
  SRC=$CACHE/src-${SHA:0:16}/llama_cpp_python-$VERSION
  if [ ! -f "$SRC/vendor/llama.cpp/CMakeLists.txt" ]; then
    rm -rf "$CACHE/src-${SHA:0:16}"; mkdir -p "$CACHE/src-${SHA:0:16}"
    tar -xzf "$SDIST" -C "$CACHE/src-${SHA:0:16}" || die "cannot unpack $SDIST"
  fi
fi
LLAMA=$SRC/vendor/llama.cpp
[ -f "$LLAMA/tools/llama-bench/llama-bench.cpp" ] || die "$LLAMA has no tools/llama-bench"

# 2. the build (once per sdist and flags)
FLAGS="${CMAKE_FLAGS[*]}"
KEY=$(printf '%s\n%s\n' "$SHA" "$FLAGS" | sha256sum | cut -c1-12)
BUILD=$CACHE/build-$KEY
BIN=$BUILD/bin/llama-bench
STAMP=$BUILD/stamp.json
LOG=$BUILD/build.log
if [ ! -x "$BIN" ] || [ ! -f "$STAMP" ]; then
  mkdir -p "$BUILD"
  echo "fasa: building llama-bench (once; ~10 min on 2 cores; log $LOG)" >&2
  GEN=(); command -v ninja >/dev/null && GEN=(-G Ninja)
  if ! { cmake -S "$LLAMA" -B "$BUILD" "${GEN[@]}" "${CMAKE_FLAGS[@]}" &&
         nice -n 10 cmake --build "$BUILD" --target llama-bench -j "$JOBS"; } >"$LOG" 2>&1; then
    tail -n 30 "$LOG" >&2
    die "llama-bench build failed; full log: $LOG"
  fi
  [ -x "$BIN" ] || die "the build finished but $BIN is missing; log: $LOG"
  "$PY" "$HERE/compare_llamacpp.py" --write-stamp "$STAMP" --stamp-bin "$BIN" \
      --stamp-sha256 "$SHA" --stamp-flags "$FLAGS" --stamp-src "$LLAMA"
fi
exec "$PY" "$HERE/compare_llamacpp.py" --llama-bench "$BIN" --stamp "$STAMP" "$@"
