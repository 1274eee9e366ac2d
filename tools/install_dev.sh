#!/usr/bin/env bash
# Install the dev extra into a virtualenv: what `make test` (and so CI) runs before the suite.
#
# llama-cpp-python has no wheel on PyPI and its C++ build was most of the install, so its wheel is built
# in the background while the rest of the dev extra (downloads and unpacking, mostly) installs, and the
# build compiles only the libraries the tests load: libllama and ggml, not the multimodal libmtmd
# (LLAVA_BUILD=OFF; the packaged gemma3 270M reads text) nor libllama-common (llama_cpp_skip_common.cmake).
# Timings and how they were measured: docs/contributing.md, "How make test installs".
#
# Usage (from the repository root): tools/install_dev.sh VENV   where VENV/bin/python exists.
set -euo pipefail

venv=${1:?"usage: tools/install_dev.sh VENV (a virtualenv with VENV/bin/python)"}
python="$venv/bin/python"
tools=$(cd "$(dirname "$0")" && pwd)
wheels="$venv/llama-cpp-wheel"
log="$venv/llama-cpp-build.log"
cores=$("$python" -c 'import os; print(os.cpu_count() or 2)')

rm -rf "$wheels"
mkdir -p "$wheels"
echo "install_dev: building llama-cpp-python's wheel in the background (log: $log)"
# Job control (set -m) puts the build (pip, cmake, ninja, the compilers) in a process group of its own,
# so that a failure or an interrupt below stops all of it.
set -m
CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_INCLUDE=$tools/llama_cpp_skip_common.cmake" \
CMAKE_BUILD_PARALLEL_LEVEL="$cores" \
  "$python" -m pip wheel --no-deps --wheel-dir "$wheels" 'llama-cpp-python>=0.3' >"$log" 2>&1 &
build=$!
set +m
trap 'kill -- "-$build" 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM

# --no-compile: byte-compiling all of it (1.6 GB) took the build's CPU; Python compiles what the tests import.
echo "install_dev: installing the rest of the dev extra"
"$python" -m pip install --quiet --no-compile -e '.[dev-base]'

echo "install_dev: the rest installed after ${SECONDS} s; waiting for llama-cpp-python's wheel"
if ! wait "$build"; then
  trap - EXIT
  tail -n 30 "$log" >&2
  echo "install_dev: error: building llama-cpp-python's wheel failed; the last lines of $log are above." \
       "Fix: read the first error in that log (the build needs a C++ compiler and CMake 3.21 or later)," \
       "then run make test again." >&2
  exit 1
fi
trap - EXIT
echo "install_dev: llama-cpp-python's wheel built after ${SECONDS} s; installing it"
"$python" -m pip install --quiet --no-compile -e '.[dev]' "$wheels"/llama_cpp_python-*.whl
rm -rf "$wheels"
echo "install_dev: done in ${SECONDS} s"
