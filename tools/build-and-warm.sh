#!/bin/sh
# Set-up command 1: install what is missing, build fox-jit into ./build and
# prebuild the kernel cache for the default trainer shapes (no GPU needed).
# Extra arguments go to `fox-jit warm` (e.g. --arch sm_90).
set -eu
cd "$(dirname "$0")/.."
FOXJIT_DEPS=build sh tools/install-deps.sh   # the build only: no test tools
cuda="${CUDA_HOME:-/usr/local/cuda}"
[ -f build/build.ninja ] || meson setup build -Dtoolkit="$cuda"
ninja -C build
exec ./build/tools/fox-jit warm "$@"
