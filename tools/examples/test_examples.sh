#!/bin/bash
# test_examples.sh VERSION PLUGIN LIBFOXJIT [COLSUM_RANK CUDA_STUB]: the C
# examples without a GPU, as a user would first run them.
#   example_plugin given a library that is not there, or is not fox-jit,
#     says so on stderr and exits 1 (not a crash);
#   example_plugin given the built library prints its version and ABI, then
#     stops at the driver (77, "SKIP: no CUDA ...") or runs to "ok:" (0);
#   example_colsum_rank with the toolkit's stub libcuda.so.1 (a driver that
#     answers every call with CUDA_ERROR_STUB_LIBRARY) prints the library's
#     version and exits 77 with "SKIP: no CUDA GPU".
set -u
version=$1 plugin=$2 lib=$3 colsum=${4:-} stub=${5:-}
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
failed=0 passed=0
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }
ok() { echo "ok: $*"; passed=$((passed + 1)); }

# run NAME CMD...: stdout in $tmp/NAME.out, stderr in $tmp/NAME.err, status in $rc.
run() {
    local name=$1; shift
    "$@" >"$tmp/$name.out" 2>"$tmp/$name.err"
    rc=$?
    sed 's/^/  | /' "$tmp/$name.out" "$tmp/$name.err"
}
has() { grep -qF -- "$2" "$tmp/$1"; }

run missing "$plugin" /nonexistent/dir/libfoxjit.so.1
if [ "$rc" = 1 ] && has missing.err "cannot load fox-jit: /nonexistent/dir/libfoxjit.so.1:" &&
   has missing.err "No such file"; then
    ok "plugin, library not there: exit 1, says so"
else
    fail "plugin, library not there: exit $rc (want 1 and 'cannot load fox-jit: ...: No such file')"
fi

run foreign "$plugin" libm.so.6
if [ "$rc" = 1 ] && has foreign.err "libm.so.6 has no foxjit_get_api"; then
    ok "plugin, not a fox-jit library: exit 1, says so"
else
    fail "plugin, not a fox-jit library: exit $rc (want 1 and 'has no foxjit_get_api')"
fi

run real "$plugin" "$lib"
if ! has real.out "fox-jit $version, ABI 2."; then
    fail "plugin, the built library: no 'fox-jit $version, ABI 2.' line (exit $rc)"
elif [ "$rc" = 77 ] && has real.out "SKIP: no CUDA"; then
    ok "plugin, the built library: table checked, stops at the driver (77)"
elif [ "$rc" = 0 ] && has real.out "ok: fox-jit $version on "; then
    ok "plugin, the built library: ran on the GPU"
else
    fail "plugin, the built library: exit $rc (want 77 with 'SKIP: no CUDA', or 0 with 'ok:')"
fi

if [ -n "$colsum" ]; then
    mkdir "$tmp/stub" && ln -s "$stub" "$tmp/stub/libcuda.so.1"
    run colsum env LD_LIBRARY_PATH="$tmp/stub${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$colsum"
    if [ "$rc" = 77 ] && has colsum.out "fox-jit $version" &&
       has colsum.out "SKIP: no CUDA GPU (cuInit: CUDA_ERROR_STUB_LIBRARY"; then
        ok "colsum_rank, stub driver: prints the version, exit 77"
    else
        fail "colsum_rank, stub driver: exit $rc (want 77, 'fox-jit $version', 'SKIP: no CUDA GPU')"
    fi
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
