#!/bin/bash
# run_rust.sh cpu|gpu SRC_ROOT BUILD_DIR [CUDA_ROOT]: the crate's tests
# through cargo, offline (the crate has no dependencies). Cargo's output
# goes to BUILD_DIR/cargo.
#   cpu: the no-GPU tests, strict (--features require-all: a test that
#        cannot find or build what it needs fails instead of skipping). The
#        crate builds its fake library and layout listing itself, with cc and
#        CUDA_ROOT's cuda.h, as a plain `cargo test` does; then the quick
#        start example is built and run (without a GPU it stops after
#        loading this build's library, exit 0).
#   gpu: the GPU integration test, exit 77 when it skipped for want of a
#        GPU; with a GPU the quick start example must run to its "ok" line.
set -u
mode=$1 src=$2 build=$3
[ -n "${4:-}" ] && export CUDA_HOME="${CUDA_HOME:-$4}"
crate="$src/bindings/rust/foxjit"
cargo=$(command -v cargo || true)
[ -n "$cargo" ] || { [ -x "$HOME/.cargo/bin/cargo" ] && cargo="$HOME/.cargo/bin/cargo"; }
if [ -z "$cargo" ]; then
    echo "cargo is not installed (rustup, or apt-get install cargo): the Rust crate is untested"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
export CARGO_TARGET_DIR="$build/cargo"
# The example loads the library under test, as the tests do.
example_lib=${FOXJIT_TEST_LIBRARY:-${FOXJIT_LIBRARY:-}}
cd "$crate" || exit 1
case $mode in
cpu)
    env -u FOXJIT_TEST_FAKE_LIBRARY -u FOXJIT_TEST_LAYOUT \
        "$cargo" test --offline --features require-all --lib --test nogpu -- --nocapture ||
        exit 1
    out=$(FOXJIT_LIBRARY=$example_lib "$cargo" run --offline --example quickstart 2>&1)
    rc=$?
    echo "$out"
    [ "$rc" = 0 ] || { echo "FAIL: the quickstart example exited $rc"; exit 1; }
    echo "$out" | grep -q '^fox-jit .* from ' ||
        { echo "FAIL: the quickstart example did not load the library"; exit 1; } ;;
gpu)
    log="$build/rust_gpu.log"
    "$cargo" test --offline --test gpu -- --nocapture 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || exit "$rc"
    grep -q '^SKIP:' "$log" && exit 77
    FOXJIT_LIBRARY=$example_lib "$cargo" run --offline --example quickstart 2>&1 | tee -a "$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] && grep -q '^ok: ' "$log" ||
        { echo "FAIL: the quickstart example did not run to its end (exit $rc)"; exit 1; } ;;
*)
    echo "usage: run_rust.sh cpu|gpu SRC_ROOT BUILD_DIR [CUDA_ROOT]" >&2; exit 2 ;;
esac
