#!/bin/bash
# The bindings on a GPU: the Rust crate's integration test, the Python
# package's GPU tests (and its CPU tests) run on the wheel installed into a
# fresh venv, the C examples, the overhead table (Python wrapper vs raw
# ctypes vs the autograd op vs C, host and GPU microseconds) and the
# torch.compile-then-capture probe (tools/torch_capture_probe.py).
#
# The GPU machine needs no cargo, meson or network: prepare here first,
#   tools/gpu-bindings.sh --prepare build     # cargo builds the Rust GPU test,
#                                             # pip the wheel, into build/bindings-gpu/
# then carry the build folder and run there
#   tools/gpu-bindings.sh build "$OUT"
# The venv sees the machine's torch (its site-packages, through a .pth
# file); the foxjit it imports is the wheel's (checked). FOXJIT_SKIP_PROBE=1 skips the probe
# (its torch.compile runs take minutes), FOXJIT_SKIP_OVERHEAD=1 the
# overhead table.
# Logs: $OUT/rust_gpu.log, python_gpu.log, python_nogpu.log, examples.log,
# overhead.md (the table), overhead.json, c_overhead.json, probe.log,
# summary.txt.
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
    rm -f "$B"/bindings-gpu/foxjit-*.whl
    python3 -m pip wheel -q --no-deps -w "$B/bindings-gpu" "$here" || { echo "pip wheel failed"; exit 1; }
    echo "prepared $(ls "$B"/bindings-gpu/foxjit-*.whl)"
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
export FOXJIT_TEST_FAKE_LIBRARY="$B/tests/bindings/libfake_foxjit.so"
export FOXJIT_TEST_LAYOUT="$B/tests/bindings/abi_layout.txt"
# The wheel in a fresh venv that also sees the machine's torch.
venv=$(mktemp -d)/venv
python3 -m venv --system-site-packages "$venv" &&
    "$venv/bin/python" -m pip install -q --no-index --no-deps "$B"/bindings-gpu/foxjit-*.whl ||
    { echo "the wheel did not install into a fresh venv"; exit 1; }
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
# torch may live in a venv of its own (the GPU machine's python3 is
# /opt/torch/.venv's), which --system-site-packages does not reach: the
# fresh venv gets a .pth line naming the site-packages torch was found in.
torch_site=$(python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null)
[ -n "$torch_site" ] && echo "$torch_site" > "$site/_machine_torch.pth"
export FOXJIT_TEST_LIBRARY="$site/.foxjit.mesonpy.libs/libfoxjit.so"
unset FOXJIT_LIBRARY PYTHONPATH
summary=()
run() { # name log command...
    local name=$1 log=$2; shift 2
    local t0=$(date +%s)
    "$@" > "$OUT/$log" 2>&1
    local rc=$?
    summary+=("$(printf '%-22s rc=%-3d %4d s  %s' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$log")")
    return $rc
}
pyrun() { # module: the tests, importing the venv's foxjit (checked first)
    "$venv/bin/python" -c 'import foxjit, sys; p = foxjit.library().path
print("foxjit from", foxjit.__file__, "library", p); sys.exit(0 if p.startswith(sys.argv[1]) else 1)' "$site" ||
        { echo "the venv's foxjit is not the wheel's"; return 1; }
    if "$venv/bin/python" -c 'import pytest' 2>/dev/null; then
        "$venv/bin/python" -m pytest -v -rs -p no:cacheprovider "tests/$1.py"
    else
        echo "(pytest is not installed: unittest)"; "$venv/bin/python" -m unittest -v "tests.$1"
    fi
}
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)' >> "$OUT/gpu.txt" 2>&1

FOXJIT_LIBRARY="$B/runtime/libfoxjit.so.1" run rust_gpu rust_gpu.log \
    "$B/bindings-gpu/rust_gpu_test" --nocapture --test-threads=1
# The tests from a copy, so that nothing imports the source tree's foxjit.
tests=$(mktemp -d) && cp -r "$here/bindings/python/tests" "$tests/" && cd "$tests" || exit 1
run python_nogpu python_nogpu.log pyrun test_nogpu
run python_gpu python_gpu.log pyrun test_gpu
run quickstart quickstart.log "$venv/bin/python" "$here/bindings/python/examples/quickstart.py"
cd "$here"
run example_colsum_rank examples.log "$B/tools/examples/example_colsum_rank"
run example_plugin examples_plugin.log "$B/tools/examples/example_plugin" "$B/runtime/libfoxjit.so.1"
# FOXJIT_SKIP_OVERHEAD=1: no timing here (a caller that runs other GPU
# work beside this script times the calls alone afterwards).
if [ "${FOXJIT_SKIP_OVERHEAD:-}" != 1 ]; then
    run c_overhead c_overhead.json "$B/tools/examples/call_overhead"
    run overhead overhead.md "$venv/bin/python" -m foxjit.overhead \
        --c-json "$OUT/c_overhead.json" --json "$OUT/overhead.json"
fi
[ "${FOXJIT_SKIP_PROBE:-}" = 1 ] ||
    run capture_probe probe.log "$venv/bin/python" "$here/tools/torch_capture_probe.py"

printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
[ -f "$OUT/overhead.md" ] && { echo "--- overhead (us per call)"; cat "$OUT/overhead.md"; }
fails=$(printf '%s\n' "${summary[@]}" | grep -vc 'rc=0 ')
echo "$(( ${#summary[@]} - fails )) passed, $fails failed" | tee -a "$OUT/summary.txt"
[ "$fails" = 0 ]
