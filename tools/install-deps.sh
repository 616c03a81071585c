#!/bin/sh
# Installs the Debian/Ubuntu packages fox-jit builds and tests with, when any
# is missing: the build (meson, ninja, a C compiler, cmocka, xxhash), and what
# tools/run-tests.sh's full run uses (valgrind, clang with libFuzzer, the
# sanitizer runtimes, python3-venv and pytest for the bindings). The CUDA
# toolkit (cuda.h, nvrtc.h, NVRTC, CCCL) is expected at /usr/local/cuda or
# $CUDA_HOME. FOXJIT_DEPS=build installs only what the build needs.
set -eu
need=""
have_pkg() { dpkg-query -W -f '${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
command -v meson >/dev/null 2>&1 || need="$need meson"
command -v ninja >/dev/null 2>&1 || need="$need ninja-build"
command -v pkg-config >/dev/null 2>&1 || need="$need pkg-config"
command -v cc >/dev/null 2>&1 || need="$need gcc"
command -v python3 >/dev/null 2>&1 || need="$need python3"
[ -f /usr/include/cmocka.h ] || need="$need libcmocka-dev"
[ -f /usr/include/xxhash.h ] || need="$need libxxhash-dev"
if [ "${FOXJIT_DEPS:-all}" != build ]; then
    command -v valgrind >/dev/null 2>&1 || need="$need valgrind"
    command -v clang >/dev/null 2>&1 || need="$need clang"
    # libFuzzer's runtime for the clang that is installed (Debian 12: 14)
    if command -v clang >/dev/null 2>&1; then
        v=$(clang -dumpversion 2>/dev/null | cut -d. -f1)
        [ -n "$v" ] && ! have_pkg "libclang-rt-$v-dev" && need="$need libclang-rt-$v-dev"
    else
        need="$need libclang-rt-14-dev"
    fi
    # A venv for the wheel test (Debian splits ensurepip out of python3).
    python3 -m ensurepip --version >/dev/null 2>&1 || need="$need python3-venv"
fi
if [ -n "$need" ]; then
    echo "install-deps: installing$need"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends $need
fi
if [ "${FOXJIT_DEPS:-all}" != build ] && ! python3 -c 'import pytest' 2>/dev/null; then
    # The bindings' Python tests. A Debian-managed python3 refuses pip
    # (PEP 668): then Debian's package.
    echo "install-deps: installing pytest"
    python3 -m pip install --quiet --disable-pip-version-check pytest 2>/dev/null ||
        python3 -m pip install --quiet --disable-pip-version-check --break-system-packages \
            pytest 2>/dev/null || {
        sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends \
            python3-pytest
    }
fi
cuda="${CUDA_HOME:-/usr/local/cuda}"
if [ ! -f "$cuda/include/nvrtc.h" ]; then
    echo "install-deps: no CUDA toolkit at $cuda (nvrtc.h missing); install it or set CUDA_HOME" >&2
    exit 1
fi
