#!/bin/bash
# run_rust.sh cpu|gpu SRC_ROOT BUILD_DIR: the crate's tests through cargo,
# offline (the crate has no dependencies). cpu: the no-GPU tests; gpu: the
# integration test, exit 77 when it skipped for want of a GPU. Cargo's
# output goes to BUILD_DIR/cargo.
set -u
mode=$1 src=$2 build=$3
crate="$src/bindings/rust/foxjit"
cargo=$(command -v cargo || true)
[ -n "$cargo" ] || { [ -x "$HOME/.cargo/bin/cargo" ] && cargo="$HOME/.cargo/bin/cargo"; }
if [ -z "$cargo" ]; then
    echo "cargo is not installed (rustup, or apt-get install cargo): the Rust crate is untested"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
export CARGO_TARGET_DIR="$build/cargo"
cd "$crate" || exit 1
case $mode in
cpu)
    exec "$cargo" test --offline --lib --test nogpu -- --nocapture ;;
gpu)
    log="$build/rust_gpu.log"
    "$cargo" test --offline --test gpu -- --nocapture 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] && grep -q '^SKIP:' "$log" && exit 77
    exit "$rc" ;;
*)
    echo "usage: run_rust.sh cpu|gpu SRC_ROOT BUILD_DIR" >&2; exit 2 ;;
esac
