#!/bin/bash
# The bindings on a GPU: the Rust crate's integration test, the Python
# package's GPU tests (and its CPU tests), the C examples and the overhead
# table (Python wrapper vs raw ctypes vs C, host and GPU microseconds).
#
# The GPU machine needs no cargo, meson or network: prepare here first,
#   tools/gpu-bindings.sh --prepare build     # cargo builds the Rust GPU test
#                                             # into build/bindings-gpu/
# then carry the build folder and run there
#   tools/gpu-bindings.sh build "$OUT"
# Logs: $OUT/rust_gpu.log, python_gpu.log, python_nogpu.log, examples.log,
# overhead.md (the table), overhead.json, c_overhead.json, summary.txt.
set -u
if [ "${1:-}" = --prepare ]; then
    B=$(cd "$2" && pwd)
    here=$(cd "$(dirname "$0")/.." && pwd)
    cargo=$(command -v cargo || echo "$HOME/.cargo/bin/cargo")
    export CARGO_TARGET_DIR=/tmp/foxjit-cargo-gpu
    mkdir -p "$B/bindings-gpu"
    (cd "$here/bindings/rust/foxjit" &&
     "$cargo" test --offline --release --test gpu --no-run --message-format=json) \
        > /tmp/foxjit-cargo-gpu.json || { echo "cargo failed"; exit 1; }
    exe=$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gpu" and m.get("executable"):
        print(m["executable"])' /tmp/foxjit-cargo-gpu.json | tail -1)
    [ -n "$exe" ] || { echo "no test binary found"; exit 1; }
    cp "$exe" "$B/bindings-gpu/rust_gpu_test"
    echo "prepared $B/bindings-gpu/rust_gpu_test ($(du -h "$B/bindings-gpu/rust_gpu_test" | cut -f1))"
    exit 0
fi

B=$(cd "$1" && pwd); OUT=$2
mkdir -p "$OUT"
here=$(cd "$(dirname "$0")/.." && pwd)
# FOXJIT_TEST_LIB_DIR: a directory of shared libraries the test programs
# need and the machine lacks (libcmocka.so.0 on a GPU host without the
# package), searched first.
if [ -n "${FOXJIT_TEST_LIB_DIR:-}" ]; then
    export LD_LIBRARY_PATH="$FOXJIT_TEST_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export FOXJIT_CACHE_DIR=/tmp/foxjit-bindings-cache
export FOXJIT_REQUIRE_GPU=1
export FOXJIT_TEST_LIBRARY="$B/runtime/libfoxjit.so.1"
export FOXJIT_LIBRARY="$FOXJIT_TEST_LIBRARY"
export FOXJIT_TEST_FAKE_LIBRARY="$B/tests/bindings/libfake_foxjit.so"
export FOXJIT_TEST_LAYOUT="$B/tests/bindings/abi_layout.txt"
export PYTHONPATH="$here/bindings/python${PYTHONPATH:+:$PYTHONPATH}"
summary=()
run() { # name log command...
    local name=$1 log=$2; shift 2
    local t0=$(date +%s)
    "$@" > "$OUT/$log" 2>&1
    local rc=$?
    summary+=("$(printf '%-22s rc=%-3d %4d s  %s' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$log")")
    return $rc
}
pyrun() { # module
    if python3 -c 'import pytest' 2>/dev/null; then
        python3 -m pytest -v -rs -p no:cacheprovider "tests/$1.py"
    else
        echo "(pytest is not installed: unittest)"; python3 -m unittest -v "tests.$1"
    fi
}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' >> "$OUT/gpu.txt" 2>&1

run rust_gpu rust_gpu.log "$B/bindings-gpu/rust_gpu_test" --nocapture --test-threads=1
cd "$here/bindings/python" || exit 1
run python_nogpu python_nogpu.log pyrun test_nogpu
run python_gpu python_gpu.log pyrun test_gpu
cd "$here"
run example_colsum_rank examples.log "$B/tools/examples/example_colsum_rank"
run example_plugin examples_plugin.log "$B/tools/examples/example_plugin" "$FOXJIT_TEST_LIBRARY"
run c_overhead c_overhead.json "$B/tools/examples/call_overhead"
run overhead overhead.md python3 -m foxjit.overhead --c-json "$OUT/c_overhead.json" \
    --json "$OUT/overhead.json"

printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
echo "--- overhead (us per call)"; cat "$OUT/overhead.md"
fails=$(printf '%s\n' "${summary[@]}" | grep -vc 'rc=0 ')
echo "$(( ${#summary[@]} - fails )) passed, $fails failed" | tee -a "$OUT/summary.txt"
[ "$fails" = 0 ]
