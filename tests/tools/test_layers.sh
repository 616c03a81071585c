#!/bin/bash
# scripts: the layers hold.
#  1. A tool (tools/fox-jit, tools/bench, tools/kloop, tools/fox-train)
#     includes, of the runtime, only the public foxjit/foxjit.h and the
#     internal toolkit.h; anything else it needs goes into toolkit.h.
#     tools/baselines is not a tool: it is the bench's and the tests'
#     library of seed kernels, built on the runtime's internals like an op.
#  2. runtime/disk_cache.c compiles with no CUDA include path: the cache
#     knows a key only as bytes and never sees cuda.h or nvrtc.h.
#  3. Nothing in the repository points at the spec folder next to the
#     checkout (a clone does not have it).
#  4. libfoxjit.so carries no baseline: neither symbols (nm -D) nor kernel
#     names or source text (strings) of the seed's kernels.
#   test_layers.sh SOURCE_ROOT CC [LIBFOXJIT_SO]
set -u
root=$1
cc=${2:-cc}
lib=${3:-}
failed=0
fail() { echo "FAIL: $*"; failed=1; }

runtime_headers=$(cd "$root/runtime" && find . -name '*.h' | sed 's|^\./||' | grep -vx 'toolkit.h')
for f in $(cd "$root" && find tools -path tools/baselines -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -print | sort); do
    while IFS= read -r inc; do
        name=${inc#*\"}; name=${name%\"*}
        base=${name##*/}
        if grep -qxF "$name" <<< "$runtime_headers" || grep -qxF "$base" <<< "$runtime_headers" &&
           [ ! -e "$root/$(dirname "$f")/$name" ]; then
            fail "$f includes the runtime header \"$name\"; tools use foxjit/foxjit.h and toolkit.h only (add what is missing to runtime/toolkit.h)"
        fi
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$root/$f")
done

# No -I for the CUDA toolkit, and no system CUDA either: an empty include
# directory shadows nothing, so cuda.h can only come from the default paths;
# -nostdinc would lose libc, so check the preprocessed list of headers.
deps=$("$cc" -std=c11 -D_GNU_SOURCE -I"$root/runtime" -M "$root/runtime/disk_cache.c" 2>&1)
rc=$?
if [ $rc -ne 0 ]; then
    fail "disk_cache.c does not compile without a CUDA include path: $deps"
elif grep -qE '(^|[ /])(cuda|nvrtc|foxjit)\.h' <<< "$deps"; then
    fail "disk_cache.c pulls in $(grep -oE '[^ ]*(cuda|nvrtc|foxjit)\.h' <<< "$deps" | head -1); the disk cache must build without CUDA or NVRTC headers"
fi

# The pattern is assembled so that this file does not match it itself.
outside='shared'
pat="\\.\\./$outside|/work/$outside|$outside/spec"
hits=$(cd "$root" && git grep -nE "$pat" -- . ':!tests/tools/test_layers.sh' 2>/dev/null ||
       grep -rnE "$pat" --exclude-dir=.git --exclude-dir=build --exclude=test_layers.sh . 2>/dev/null)
[ -z "$hits" ] || fail "the repository refers to the spec folder outside it, which a clone does not have: $hits"

if [ -n "$lib" ]; then
    pattern='_legacy|colsum_serial|colsum_p[12]\b'
    syms=$(nm -D "$lib" | grep -E "$pattern")
    [ -z "$syms" ] || fail "nm -D $lib shows baseline symbols: $syms"
    text=$(strings "$lib" | grep -E "$pattern" | head -3)
    [ -z "$text" ] || fail "strings $lib shows baseline kernels or sources: $text"
fi

[ $failed -eq 0 ] && echo "ok: tools include only the public and toolkit headers; disk_cache.c builds without CUDA; no outside references${lib:+; no baselines in $lib}"
exit $failed
