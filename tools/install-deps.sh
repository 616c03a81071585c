#!/bin/sh
# Installs the Debian/Ubuntu packages fox-jit builds and tests with, when any
# is missing. The CUDA toolkit (cuda.h, nvrtc.h, NVRTC, CCCL) is expected at
# /usr/local/cuda or $CUDA_HOME.
set -eu
need=""
command -v meson >/dev/null 2>&1 || need="$need meson"
command -v ninja >/dev/null 2>&1 || need="$need ninja-build"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v python3 >/dev/null 2>&1 || need="$need python3"
[ -f /usr/include/cmocka.h ] || need="$need libcmocka-dev"
[ -f /usr/include/xxhash.h ] || need="$need libxxhash-dev"
if [ -n "$need" ]; then
    echo "install-deps: installing$need"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends $need
fi
cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$cuda/include/nvrtc.h" ]; then
    echo "install-deps: no CUDA toolkit at $cuda (nvrtc.h missing); install it or set CUDA_HOME" >&2
    exit 1
fi
