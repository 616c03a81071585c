#!/bin/bash
# test_install.sh BUILD_DIR: `meson install` into a scratch DESTDIR, then
# (1) the installed fox-train finds the installed library by itself (no
# FOXJIT_LIBRARY, no LD_LIBRARY_PATH): with the driver pointed nowhere it
# must get past loading the library and stop at the driver; (2) pkg-config
# foxjit of the installed tree builds the plugin example against the
# installed header, and it loads the installed library.
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
echo "1 passed, 0 failed"
