#!/bin/bash
# scripts: the layers hold.
#  1. A tool (tools/fox-jit, tools/bench and the ops' ops/<op>/bench.c,
#     tools/kloop, tools/fox-train) includes, of the runtime, only the
#     public foxjit/foxjit.h and the internal toolkit.h (and an op's
#     policy.h: plain constants); anything else it needs goes into
#     toolkit.h. The ops' host headers (ops/<op>/op.h, ops/common/) are the
#     runtime's too.
#     tools/baselines is not a tool: it is the bench's and the tests'
#     library of seed kernels, built on the runtime's internals like an op.
#  2. runtime/cache/disk_cache.c compiles with no CUDA include path: the cache
#     knows a key only as bytes and never sees cuda.h or nvrtc.h.
#  3. Nothing in the repository points at the spec folder next to the
#     checkout (a clone does not have it).
#  4. libfoxjit.so carries no baseline: neither symbols (nm -D) nor kernel
#     names or source text (strings) of the seed's kernels; and nothing of
#     the runtime's inside leaves it: its dynamic table has foxjit_* names
#     only (the toolkit's fj_tk_* wrappers are linked into the tools
#     statically, from libfoxjit_toolkit.a).
#  5. toolkit.h is a narrow interface, not a re-export of the internals: of
#     the runtime's headers it includes only those of toolkit_allowed below,
#     and they include none but each other.
#   test_layers.sh SOURCE_ROOT CC [LIBFOXJIT_SO]
set -u
root=$1
cc=${2:-cc}
lib=${3:-}
failed=0
fail() { echo "FAIL: $*"; failed=1; }

runtime_headers=$( (cd "$root/runtime" && find . -name '*.h' -printf '%f\n' | grep -vx 'toolkit.h'
                   cd "$root/ops" && find . -mindepth 2 -name '*.h' ! -name policy.h) |
                 sed 's|^\./||')
for f in $(cd "$root" && { find tools -path tools/baselines -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) -print; find ops -name bench.c; } | sort); do
    while IFS= read -r inc; do
        name=${inc#*\"}; name=${name%\"*}
        base=${name##*/}
        # A tool's own header of a runtime header's name is its own; next
        # to an op's bench, every header but policy.h is the op's host side.
        own=$root/$(dirname "$f")/$name
        [ "${f#ops/}" = "$f" ] || [ "$base" = policy.h ] || own=
        if grep -qxF "$name" <<< "$runtime_headers" || grep -qxF "$base" <<< "$runtime_headers" &&
           [ ! -e "$own" ]; then
            fail "$f includes the runtime header \"$name\"; tools use foxjit/foxjit.h and toolkit.h only (declare what is missing in runtime/toolkit.h and wrap it in runtime/toolkit_*.c)"
        fi
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$root/$f")
done

# No -I for the CUDA toolkit, and no system CUDA either: an empty include
# directory shadows nothing, so cuda.h can only come from the default paths;
# -nostdinc would lose libc, so check the preprocessed list of headers.
deps=$("$cc" -std=c11 -D_GNU_SOURCE -I"$root/runtime/core" -I"$root/runtime/cache" \
      -M "$root/runtime/cache/disk_cache.c" 2>&1)
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

# What toolkit.h may include of the runtime, and why (runtime/toolkit.h
# says the same): the public API; and cuda_loader.h, the driver's entry
# points as the runtime dlopen'd them, which the bench and `fox-jit info`
# call instead of linking libcuda (`fox-jit warm` runs without a driver),
# and which includes nothing of the runtime but the public header. Any
# other internal type or function a tool needs gets a wrapper in
# runtime/toolkit_*.c, not an #include here.
toolkit_allowed='foxjit/foxjit.h cuda_loader.h'
quoted_includes() {
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"
}
for f in toolkit.h loaders/cuda_loader.h; do
    path=$root/runtime/$f
    [ -f "$path" ] || { fail "runtime/$f is missing"; continue; }
    for inc in $(quoted_includes "$path"); do
        case " $toolkit_allowed " in
        *" $inc "*) ;;
        *) fail "runtime/$f includes \"$inc\"; toolkit.h may include only $toolkit_allowed (wrap what a tool needs in runtime/toolkit_*.c instead)" ;;
        esac
    done
done

if [ -n "$lib" ]; then
    # The tools' own output first: an empty filter of a failed nm or
    # strings (no such file, no binutils) would read as "nothing found".
    dyn=$(nm -D --defined-only "$lib") && all=$(nm -D "$lib") && str=$(strings "$lib") &&
        [ -n "$dyn" ] && [ -n "$str" ] ||
        { fail "nm -D / strings could not read $lib (binutils installed? the library built?)"; dyn= all= str=; }
    inner=$(printf '%s\n' "$dyn" | awk 'NF >= 3 && $3 !~ /^foxjit_/ {print $3}' | head -5)
    [ -z "$inner" ] || fail "nm -D $lib exports names other than foxjit_*: $inner"
    case "$dyn" in *" T foxjit_runtime_create"*) ;; *)
        [ -z "$dyn" ] || fail "nm -D $lib does not show foxjit_runtime_create: not the library?" ;;
    esac
    pattern='_legacy|colsum_serial|colsum_p[12]\b'
    syms=$(printf '%s\n' "$all" | grep -E "$pattern")
    [ -z "$syms" ] || fail "nm -D $lib shows baseline symbols: $syms"
    text=$(printf '%s\n' "$str" | grep -E "$pattern" | head -3)
    [ -z "$text" ] || fail "strings $lib shows baseline kernels or sources: $text"
fi

[ $failed -eq 0 ] && echo "ok: tools include only the public and toolkit headers; toolkit.h includes only $toolkit_allowed; disk_cache.c builds without CUDA; no outside references${lib:+; no baselines and only foxjit_* exported in $lib}"
exit $failed
