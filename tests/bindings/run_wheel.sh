#!/bin/bash
# run_wheel.sh SRC_ROOT: what a Python user does. `pip wheel` at the
# repository root (meson-python over meson.build), then a fresh venv with
# only that wheel installed (no network, no meson, no environment
# variable), and in it: import foxjit, its version, `fox-jit warm` and
# `python -m foxjit`, the package's no-GPU tests against the installed
# package, and the quick start (bindings/python/examples/quickstart.py:
# exit 77 without a GPU, which is accepted only when there is none).
#
# The wheel's build dependencies (meson-python, meson, ninja) come from the
# package index; without network it builds with the ones installed here
# (pip install meson-python), else it fails saying so.
set -u
src=$1
py=${PYTHON:-python3}
tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

echo "== pip wheel $src"
t0=$(date +%s)
if ! "$py" -m pip wheel --no-deps -w "$tmp/dist" "$src" > "$tmp/wheel.log" 2>&1; then
    if grep -qiE 'no matching distribution|could not find a version|network|resolve|connection' \
            "$tmp/wheel.log" && "$py" -c 'import mesonpy' 2>/dev/null; then
        echo "(no package index: building with this Python's meson-python)"
        "$py" -m pip wheel --no-deps --no-build-isolation -w "$tmp/dist" "$src" \
            > "$tmp/wheel.log" 2>&1 || { tail -n 40 "$tmp/wheel.log"; fail "pip wheel"; }
    else
        tail -n 40 "$tmp/wheel.log"
        fail "pip wheel (needs the package index or pip install meson-python)"
    fi
fi
whl=$(ls "$tmp"/dist/foxjit-*.whl) || fail "no wheel in $tmp/dist"
echo "built $(basename "$whl"): $(stat -c %s "$whl") bytes in $(( $(date +%s) - t0 )) s"
case $(basename "$whl") in
    *-py3-none-linux_*.whl) ;;
    *) fail "the wheel's tags should be py3-none-linux_<arch> (no Python extension inside)" ;;
esac

echo "== a fresh venv with the wheel alone"
"$py" -m venv "$tmp/venv" || fail "python3 -m venv (Debian: apt-get install python3-venv)"
v=$tmp/venv/bin
"$v/python" -m pip install -q --no-index --no-deps "$whl" || fail "pip install of the wheel"
cd "$tmp" || exit 1
clean=(env -u FOXJIT_LIBRARY -u FOXJIT_TEST_LIBRARY -u PYTHONPATH -u LD_LIBRARY_PATH
       -u FOXJIT_CACHE_DIR)
out=$("${clean[@]}" "$v/python" -c 'import foxjit; print(foxjit.version(), foxjit.library().path)') ||
    fail "import foxjit in the venv"
echo "foxjit $out"
case $out in
    *"$tmp/venv/"*) ;;
    *) fail "the package loaded a library outside the venv: $out" ;;
esac
want=$(sed -n "s/^ *version: '\(.*\)',/\1/p" "$src/meson.build" | head -n 1)
[ "${out%% *}" = "$want" ] || fail "version ${out%% *}, meson.build says $want"
"${clean[@]}" "$v/fox-jit" version | grep -qx "fox-jit $want" || fail "fox-jit version"
"${clean[@]}" "$v/python" -m foxjit version | grep -qx "fox-jit $want" ||
    fail "python -m foxjit version"
printf 'column_sum rows=8192 cols=42\n' > "$tmp/shapes.txt"
"${clean[@]}" "$v/fox-jit" warm --arch sm_90 --manifest "$tmp/shapes.txt" \
    --cache-dir "$tmp/cache" || fail "fox-jit warm from the venv"
ls "$tmp"/cache/*.fjc > /dev/null 2>&1 || fail "fox-jit warm wrote no entry"

echo "== the package's no-GPU tests against the installed package"
cp -r "$src/bindings/python/tests" "$tmp/tests"
if "$v/python" -c 'import pytest' 2>/dev/null || "$py" -c 'import pytest' 2>/dev/null; then
    # pytest from the host Python, importing foxjit from the venv's site-packages
    site=$("$v/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    "${clean[@]}" FOXJIT_TEST_LIBRARY="$site/.foxjit.mesonpy.libs/libfoxjit.so" \
        PYTHONPATH="$site" "$py" -m pytest -q -p no:cacheprovider "$tmp/tests/test_nogpu.py" ||
        fail "test_nogpu.py against the installed package"
else
    echo "(pytest is missing: the no-GPU tests were not run here; they run in python_package)"
    [ "${CI:-}" = true ] && fail "pytest is missing"
fi

echo "== the quick start"
"${clean[@]}" "$v/python" "$src/bindings/python/examples/quickstart.py"
rc=$?
if [ $rc = 77 ]; then
    if "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null
    then
        fail "the quick start skipped on a machine with a GPU"
    fi
    echo "quick start: no GPU here (exit 77), as it should"
elif [ $rc != 0 ]; then
    fail "the quick start exited $rc"
fi
echo "wheel: ok"
