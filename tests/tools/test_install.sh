#!/bin/bash
# test_install.sh BUILD_DIR: `meson install` into a scratch DESTDIR, then
# (1) the installed fox-train finds the installed library by itself (no
# FOXJIT_LIBRARY, no LD_LIBRARY_PATH): with the driver pointed nowhere it
# must get past loading the library and stop at the driver; (2) pkg-config
# foxjit of the installed tree builds the plugin example against the
# installed header, and it loads the installed library; (3) README's
# commands for a prefix outside the system's, run as written: with
# PKG_CONFIG_PATH=<prefix>/<libdir>/pkgconfig, colsum_rank.c links against
# the installed library and finds it at run time through
# -Wl,-rpath,$(pkg-config --variable=libdir foxjit), or without the rpath
# through LD_LIBRARY_PATH, and not otherwise; each run stops at "no CUDA
# GPU" (exit 77) on the toolkit's stub libcuda, which proves it started.
set -u
build=$1
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
meson install -C "$build" --destdir "$tmp" --quiet >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; fail "meson install"; }
exe=$(find "$tmp" -type f -name fox-train | head -1)
lib=$(find "$tmp" -name libfoxjit.so.1 | head -1)
pc=$(find "$tmp" -name foxjit.pc | head -1)
[ -n "$exe" ] && [ -n "$lib" ] && [ -n "$pc" ] || fail "fox-train, libfoxjit.so.1 or foxjit.pc not installed"
echo "installed: ${exe#$tmp} ${lib#$tmp} ${pc#$tmp}"

out=$(env -u FOXJIT_LIBRARY -u LD_LIBRARY_PATH FOXJIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1 \
      "$exe" --steps 1 2>&1)
echo "fox-train: $out"
echo "$out" | grep -q "could not be loaded; tried" && fail "the installed fox-train did not find its library"
echo "$out" | grep -q "no CUDA driver" || fail "expected fox-train to stop at the missing driver"

prefix=$(sed -n 's/^prefix=//p' "$pc")
flags=$(PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --define-variable=prefix="$tmp$prefix" \
        --cflags --libs foxjit) || fail "pkg-config foxjit"
echo "pkg-config foxjit: $flags"
src=$(dirname "$0")/../../tools/examples/plugin.c
cc -std=c11 -Wall -Wextra -Werror $flags "$src" -ldl -o "$tmp/plugin" || fail "building against the installed header"
"$tmp/plugin" "$lib"
rc=$?
[ "$rc" = 0 ] || [ "$rc" = 77 ] || fail "the plugin example on the installed library (exit $rc)"

# (3) The staged tree stands for a `meson setup --prefix=<dir>` install:
# its foxjit.pc names the directory it is in, as meson writes it there.
sed -i "s|^prefix=.*|prefix=$tmp$prefix|" "$pc"
toolkit=$(python3 -c 'import json, sys
print(next(o["value"] for o in json.load(open(sys.argv[1])) if o["name"] == "toolkit"))' \
    "$build/meson-info/intro-buildoptions.json") || fail "the build's toolkit option"
stubs="$toolkit/lib64/stubs"
if [ ! -f "$stubs/libcuda.so" ]; then
    echo "no $stubs/libcuda.so: the pkg-config commands are not checked"
    echo "1 passed, 0 failed"
    exit 0
fi
mkdir "$tmp/driver" && ln -s "$stubs/libcuda.so" "$tmp/driver/libcuda.so.1"
example=$(dirname "$0")/../../tools/examples/colsum_rank.c
(
    set -e
    export PKG_CONFIG_PATH=$(dirname "$pc")
    unset LD_LIBRARY_PATH
    libdir=$(pkg-config --variable=libdir foxjit)
    [ "$libdir" = "$(dirname "$lib")" ] || { echo "libdir $libdir is not $(dirname "$lib")"; exit 1; }
    cc -std=c11 "$example" $(pkg-config --cflags --libs foxjit) \
        -Wl,-rpath,"$(pkg-config --variable=libdir foxjit)" -L"$stubs" -lcuda -lm \
        -o "$tmp/colsum_rpath"
    cc -std=c11 "$example" $(pkg-config --cflags --libs foxjit) -L"$stubs" -lcuda -lm \
        -o "$tmp/colsum_plain"
) || fail "building colsum_rank.c with pkg-config foxjit"
libdir=$(dirname "$lib")
# expect NAME STATUS LD_LIBRARY_PATH PROGRAM: the status, and for 77 the
# version line before the stop (the library loaded).
expect() {
    local out rc
    out=$(env -u LD_LIBRARY_PATH ${3:+LD_LIBRARY_PATH=$3} "$4" 2>&1)
    rc=$?
    echo "$1: exit $rc: $out"
    [ "$rc" = "$2" ] || fail "$1: exit $rc, expected $2"
    if [ "$2" = 77 ]; then
        echo "$out" | grep -q "^fox-jit " && echo "$out" | grep -q "SKIP: no CUDA GPU" ||
            fail "$1: expected the version, then 'SKIP: no CUDA GPU'"
    fi
}
expect "rpath" 77 "$tmp/driver" "$tmp/colsum_rpath"
expect "LD_LIBRARY_PATH" 77 "$libdir:$tmp/driver" "$tmp/colsum_plain"
# Neither: the loader cannot find the library (exit 127), so the two
# above found it through the documented means and nothing else.
expect "neither" 127 "$tmp/driver" "$tmp/colsum_plain"
ldd_line=$(env LD_LIBRARY_PATH="$tmp/driver" ldd "$tmp/colsum_rpath" | grep libfoxjit.so.1)
echo "$ldd_line" | grep -qF "$libdir/libfoxjit.so.1" ||
    fail "the rpath build loads another libfoxjit.so.1: $ldd_line"
echo "2 passed, 0 failed"
