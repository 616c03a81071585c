#!/bin/bash
# scripts: the layers hold.
#  1. A tool (tools/fox-jit, tools/bench and the ops' ops/<op>/bench.c,
#     tools/kloop, tools/fox-train, tools/common) includes, of the
#     runtime, only the public foxjit/foxjit.h and the toolkit's headers
#     (toolkit.h, and its areas toolkit_cache.h, toolkit_build.h,
#     toolkit_bench.h), and an op's policy.h (plans and limits in plain
#     C); anything else it needs goes into the toolkit. The ops' host
#     headers (ops/<op>/op.h, ops/common/) are the runtime's too, and so is
#     the library's driver table: a tool that calls the driver loads it
#     itself (tools/common/driver.h).
#     tools/baselines, the bench's and the tests' library of the original
#     kernels, is a set of ops outside the library and obeys the ops' rule:
#     it includes of the runtime only what the ops' host side includes
#     (ops/*/op.[ch], ops/common/), and loads its kernels through the
#     op-call layer, never straight from the module cache.
#  2. The runtime is layers, bottom to top: core, cache, loaders, build,
#     compiler, modules, call, then the ops (ops/), the API table and the
#     toolkit (docs/architecture.md). Each file is in its layer's folder and
#     includes headers of its own layer or below, never above; no include
#     chain of runtime/, ops/ and include/ is deeper than 6; the disk cache
#     (runtime/cache/) compiles with no CUDA include path: it knows a key
#     only as bytes and never sees cuda.h or nvrtc.h.
#  3. Nothing in the repository points at the spec folder next to the
#     checkout (a clone does not have it).
#  4. libfoxjit.so carries no baseline: neither symbols (nm -D) nor kernel
#     names or source text (strings) of the original trainer's kernels; and
#     nothing of the runtime's inside leaves it: its dynamic table has
#     foxjit_* names only (the toolkit's fj_tk_* wrappers are linked into
#     the tools statically, from libfoxjit_toolkit.a).
#  5. The toolkit is a narrow interface, not a re-export of the internals:
#     its headers (runtime/toolkit/, all but toolkit_internal.h) include of
#     the runtime only foxjit/foxjit.h, and each other.
#   test_layers.sh SOURCE_ROOT CC [LIBFOXJIT_SO]
set -u
root=$1
cc=${2:-cc}
lib=${3:-}
failed=0
fail() { echo "FAIL: $*"; failed=1; }

runtime_headers=$( (cd "$root/runtime" && find . -name '*.h' -printf '%f\n' | grep -vxE 'toolkit(_cache|_build|_bench)?\.h'
                   cd "$root/ops" && find . -mindepth 2 -name '*.h' ! -name policy.h) |
                 sed 's|^\./||')
quoted_includes() {
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$@"
}

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
            fail "$f includes the runtime header \"$name\"; tools use foxjit/foxjit.h and the toolkit's headers only (declare what is missing in its area, runtime/toolkit/toolkit_<area>.h, and wrap it in toolkit_<area>.c)"
        fi
    done < <(grep -E '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$root/$f")
done

# The baselines include, of the runtime, what the ops' host side does;
# their own headers and the ops' are theirs to include.
all_runtime_headers=$(cd "$root/runtime" && find . -name '*.h' -printf '%f\n')
op_includes=$(cd "$root/ops" && quoted_includes */op.c */op.h common/*.c common/*.h |
              sed 's|.*/||' | sort -u)
for f in $(cd "$root" && find tools/baselines \( -name '*.c' -o -name '*.h' \) | sort); do
    for name in $(quoted_includes "$root/$f"); do
        base=${name##*/}
        [ -e "$root/tools/baselines/$name" ] || [ -e "$root/ops/$name" ] && continue
        if grep -qxF "$base" <<< "$all_runtime_headers" && ! grep -qxF "$base" <<< "$op_includes"; then
            fail "$f includes the runtime header \"$name\", which no op's host side includes; a baseline is an op: it includes what ops/<op>/op.c may, and loads its kernels through the op-call layer (fj_op_load, fj_op_prepare)"
        fi
    done
done
window=$(cd "$root" && grep -nE '\bfj_module_get\b' -r tools/baselines)
[ -z "$window" ] || fail "tools/baselines calls the module cache itself: $window; load a baseline's kernels through its fj_op descriptor (fj_op_load, fj_op_prepare), as an op does"

# The runtime's layers, bottom to top (docs/architecture.md draws them).
# A file's layer is its folder's: runtime/<layer>/, ops/ (the ops: every
# op folder, common/, the op list and its table), include/ (the public
# header, which every layer may include: core's). A file includes headers
# of its own layer or of a layer below, never above; and no chain of
# includes through runtime/, ops/ and include/ is deeper than max_depth,
# the file itself counted as 1 (op.c -> op_call.h -> module_cache.h ->
# registry.h is 4).
layers='core cache loaders build compiler modules call ops api toolkit'
max_depth=6
declare -A rank
layer_n=0
for l in $layers; do rank[$l]=$layer_n; layer_n=$((layer_n + 1)); done
# Sets layer to the layer of file $1, or "" for a file in none.
set_layer() {
    case $1 in
    include/*) layer=core ;;
    ops/*) layer=ops ;;
    runtime/*/*) layer=${1#runtime/}; layer=${layer%%/*}; [ -n "${rank[$layer]:-}" ] || layer= ;;
    *) layer= ;;
    esac
}
include_names() {
    sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$1"
}
# Headers are included by their bare names ("runtime.h"; an op's by its
# folder, "colsum/op.h"): meson puts every layer folder, ops/ and include/
# on the include path, so a name is resolved as the compiler does, from the
# including file's folder first.
inc_dirs="include ops"
for l in $layers; do
    [ -d "$root/runtime/$l" ] && inc_dirs="$inc_dirs runtime/$l"
done
for f in $(cd "$root" && find runtime ops -name '*.[ch]'); do
    set_layer "$f"
    [ -n "$layer" ] || fail "$f is in no layer: a file of the runtime lives in its layer's folder, runtime/<layer>/ (a new layer goes into layers in tests/tools/test_layers.sh, in its place from the bottom, and into docs/architecture.md)"
done
dups=$(cd "$root" && find runtime -mindepth 2 -name '*.h' -printf '%f\n' | sort | uniq -d)
[ -z "$dups" ] || fail "runtime/ has two headers named $(echo $dups): a bare #include would find either"

# What the library and the toolkit are built from: every header, and the
# sources meson compiles into them (an op folder's test.c and bench.c are
# built into the gpu tests and the bench instead: the tools' rule above
# checks the bench). The build's compile database says which.
db=
d=$([ -n "$lib" ] && realpath -m "$(dirname "$lib")")
while [ -n "$d" ] && [ "$d" != / ]; do
    [ -f "$d/compile_commands.json" ] && { db=$d/compile_commands.json; break; }
    d=$(dirname "$d")
done
lib_sources=
if [ -z "$db" ]; then
    fail "no compile_commands.json above ${lib:-(no library given)}: the layer check needs the build (test_layers.sh SOURCE_ROOT CC LIBFOXJIT_SO)"
else
    lib_sources=$(python3 - "$db" "$root" <<'EOF'
import json, os, sys
db, root = sys.argv[1], os.path.realpath(sys.argv[2])
for e in json.load(open(db)):
    if '/libfoxjit_internal.a.p/' in '/' + e['output'] or '/libfoxjit_toolkit.a.p/' in '/' + e['output']:
        path = os.path.realpath(os.path.join(e['directory'], e['file']))
        if path.startswith(root + '/'):
            print(os.path.relpath(path, root))
EOF
)
    [ -n "$lib_sources" ] || fail "$db lists no source of libfoxjit_internal.a or libfoxjit_toolkit.a"
fi

# Every quoted include of runtime/, ops/ and include/ that resolves to one
# of their files, as "file target" lines.
edges=$(cd "$root" && for f in $(find runtime ops include \( -name '*.c' -o -name '*.h' \) | sort); do
    dir=$(dirname "$f")
    for inc in $(include_names "$f"); do
        for d in $dir $inc_dirs; do
            if [ -f "$d/$inc" ]; then
                echo "$f $(realpath -m --relative-to=. "$d/$inc")"
                break
            fi
        done
    done
done)

declare -A checked
for f in $(cd "$root" && find runtime ops include -name '*.h') $lib_sources; do checked[$f]=1; done
while read -r f t; do
    [ -n "$f" ] && [ -n "${checked[$f]:-}" ] || continue
    set_layer "$f"; lf=$layer
    set_layer "$t"; lt=$layer
    # A file in no layer is reported above.
    [ -n "$lf" ] && [ -n "$lt" ] || continue
    if [ "${rank[$lt]}" -gt "${rank[$lf]}" ]; then
        fail "$f ($lf) includes \"${t##*/}\" ($t, $lt): an include points up a layer (bottom to top: $layers); move what it needs down to $lf or below, or the file up"
    fi
done <<< "$edges"

# The longest chain from every file, and any cycle.
depth=$(cd "$root" && { printf '%s\n' "$edges"; echo "--"; find runtime ops include \( -name '*.c' -o -name '*.h' \) | sort; } |
    awk -v max="$max_depth" '
    $0 == "--" { files = 1; next }
    !files { out[$1] = out[$1] " " $2; next }
    { all[++n] = $1 }
    function walk(f,    k, i, a, d, best) {
        if (f in depth) return depth[f]
        if (f in open) { cycle = cycle ? cycle : f; return 0 }
        open[f] = 1; best = 0; chain[f] = f
        k = split(out[f], a, " ")
        for (i = 1; i <= k; i++) {
            d = walk(a[i])
            if (d > best) { best = d; chain[f] = f " -> " chain[a[i]] }
        }
        delete open[f]
        return depth[f] = best + 1
    }
    END {
        top = ""
        for (i = 1; i <= n; i++) {
            d = walk(all[i])
            if (d > max) print "deep " d " " chain[all[i]]
            if (d > topd) { topd = d; top = chain[all[i]] }
        }
        if (cycle) print "cycle " cycle
        print "top " topd " " top
    }')
while read -r kind n rest; do
    case $kind in
    deep) fail "an include chain of depth $n, past $max_depth: $rest; a header includes only what its declarations need (a type used by pointer can be declared, not included)" ;;
    cycle) fail "an include cycle through $n: a header includes itself through others" ;;
    top) longest="$n ($rest)" ;;
    esac
done <<< "$depth"
echo "the longest include chain: ${longest:-?}"

# The disk cache knows a key only as bytes: each of its files compiles
# with no include path but core's and its own, and no CUDA, NVRTC or
# public header (which includes cuda.h). No -I for the CUDA toolkit, and
# no system CUDA either: an empty include directory shadows nothing, so
# cuda.h can only come from the default paths; -nostdinc would lose libc,
# so check the preprocessed list of headers.
for c in "$root"/runtime/cache/*.c; do
    deps=$("$cc" -std=c11 -D_GNU_SOURCE -I"$root/runtime/core" -I"$root/runtime/cache" -M "$c" 2>&1)
    rc=$?
    if [ $rc -ne 0 ]; then
        fail "${c#"$root"/} does not compile without a CUDA include path: $deps"
    elif grep -qE '(^|[ /])(cuda|nvrtc|foxjit)\.h' <<< "$deps"; then
        fail "${c#"$root"/} pulls in $(grep -oE '[^ ]*(cuda|nvrtc|foxjit)\.h' <<< "$deps" | head -1); the disk cache must build without CUDA or NVRTC headers"
    fi
done

# The pattern is assembled so that this file does not match it itself.
outside='shared'
pat="\\.\\./$outside|/work/$outside|$outside/spec"
hits=$(cd "$root" && git grep -nE "$pat" -- . ':!tests/tools/test_layers.sh' 2>/dev/null ||
       grep -rnE "$pat" --exclude-dir=.git --exclude-dir=build --exclude=test_layers.sh . 2>/dev/null)
[ -z "$hits" ] || fail "the repository refers to the spec folder outside it, which a clone does not have: $hits"

# What the toolkit's headers may include of the runtime, and why
# (runtime/toolkit/toolkit.h says the same): the public API, and each
# other. Not the driver's table: a tool that calls the driver loads it
# itself (tools/common/driver.h), and `fox-jit warm` runs without one. Any
# other internal type or function a tool needs gets a wrapper in the
# toolkit's toolkit_<area>.c, not an #include here.
toolkit_allowed='foxjit/foxjit.h toolkit_cache.h toolkit_build.h toolkit_bench.h'
[ -f "$root/runtime/toolkit/toolkit.h" ] || fail "runtime/toolkit/toolkit.h is missing"
for path in "$root"/runtime/toolkit/toolkit*.h; do
    f=${path#"$root"/}
    [ "${f##*/}" != toolkit_internal.h ] || continue
    for inc in $(quoted_includes "$path"); do
        case " $toolkit_allowed " in
        *" $inc "*) ;;
        *) fail "$f includes \"$inc\"; the toolkit's headers may include only $toolkit_allowed (wrap what a tool needs in runtime/toolkit/toolkit_<area>.c instead)" ;;
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

[ $failed -eq 0 ] && echo "ok: tools include only the public and toolkit headers; the toolkit's headers include only $toolkit_allowed; the baselines include only what ops include; the runtime's layers hold, no include chain past $max_depth; the disk cache builds without CUDA; no outside references${lib:+; no baselines and only foxjit_* exported in $lib}"
exit $failed
