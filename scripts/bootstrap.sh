#!/usr/bin/env bash
# Idempotent setup. `bootstrap.sh core` = venv + planner (enough for `plan`);
# `bootstrap.sh full` = everything the tests need: extras, llama.cpp built once into .cache, chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
MODE=${1:-core}
PY=${PYTHON:-python3}
VENV=$ROOT/.venv
LLAMA_VER=0.3.36
log() { echo "[bootstrap] $*" >&2; }

stamp_ok() { [ -f "$VENV/.stamp-$1" ] && [ "$(cat "$VENV/.stamp-$1")" = "$(sha1sum pyproject.toml | cut -c1-12)" ]; }
stamp() { sha1sum pyproject.toml | cut -c1-12 > "$VENV/.stamp-$1"; }

if [ ! -x "$VENV/bin/python" ]; then
  log "creating $VENV"
  "$PY" -m venv "$VENV"
fi
PIP="$VENV/bin/python -m pip"

if ! stamp_ok core; then
  log "installing the planner (core)"
  $PIP install -q -e . >&2
  stamp core
fi
[ "$MODE" = core ] && exit 0

if ! stamp_ok full; then
  log "installing extras: app, calibration, dev"
  $PIP install -q -e '.[app,calibration,dev]' >&2
  stamp full
fi

# llama.cpp: one build gives llama-bench/llama-batched-bench/llama-quantize, llama-server (the `plan serve` check;
# no web UI, no curl/SSL) and libllama for the bindings. An older build without llama-server only adds that target.
BUILD=$ROOT/.cache/llama-build
if [ ! -x "$BUILD/bin/llama-bench" ] || [ ! -f "$BUILD/bin/libllama.so" ] || [ ! -x "$BUILD/bin/llama-server" ]; then
  log "building llama.cpp from the llama-cpp-python $LLAMA_VER sdist (about 10 min on 2 cores)"
  mkdir -p .cache/sdist
  [ -f .cache/sdist/llama_cpp_python-$LLAMA_VER.tar.gz ] || \
    $PIP download -q --no-deps --no-binary :all: -d .cache/sdist llama-cpp-python==$LLAMA_VER >&2
  [ -d .cache/sdist/llama_cpp_python-$LLAMA_VER ] || tar xzf .cache/sdist/llama_cpp_python-$LLAMA_VER.tar.gz -C .cache/sdist
  SRC=.cache/sdist/llama_cpp_python-$LLAMA_VER
  GEN=""; command -v ninja >/dev/null && GEN="-G Ninja"
  cmake -S $SRC/vendor/llama.cpp -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=ON -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DCMAKE_C_FLAGS_RELEASE=-O2 -DCMAKE_CXX_FLAGS_RELEASE=-O2 >&2
  cmake --build "$BUILD" -j "$(nproc)" --target llama llama-bench llama-batched-bench llama-quantize llama-server >&2
fi
if ! "$VENV/bin/python" -c "import llama_cpp" 2>/dev/null; then
  log "installing llama-cpp-python bindings against the built libllama"
  SRC=.cache/sdist/llama_cpp_python-$LLAMA_VER
  CMAKE_ARGS="-DLLAMA_BUILD=OFF -DLLAVA_BUILD=OFF" $PIP install -q "$SRC" >&2
fi

# Debian chromium for the real-browser test (browser downloads fail here).
if ! command -v chromium >/dev/null; then
  log "installing Debian chromium"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq >&2 || true
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >&2
fi
log "ready"
