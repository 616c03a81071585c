#!/bin/bash
# run_python.sh cpu|gpu SRC_ROOT: the Python package's tests, from the
# source tree (PYTHONPATH). cpu: the no-GPU tests, then the package
# installed with pip into a scratch folder and imported from there. gpu:
# the GPU tests (exit 77 without torch or a GPU). pytest runs them when it is
# installed, else unittest (CI installs pytest; the GPU machine may lack it).
set -u
mode=$1 src=$2
py=${PYTHON:-python3}
pkg="$src/bindings/python"
export PYTHONPATH="$pkg${PYTHONPATH:+:$PYTHONPATH}"
[ -n "${FOXJIT_TEST_LIBRARY:-}" ] && export FOXJIT_LIBRARY="$FOXJIT_TEST_LIBRARY"
cd "$pkg" || exit 1

run_tests() {   # module
    if "$py" -c 'import pytest' 2>/dev/null; then
        "$py" -m pytest -q -rs -p no:cacheprovider "tests/$1.py"
    else
        [ "${CI:-}" = true ] && { echo "pytest is missing (pip install pytest)"; return 1; }
        echo "(pytest is not installed: running with unittest)"
        "$py" -m unittest -v "tests.$1"
    fi
}

case $mode in
cpu)
    run_tests test_nogpu || exit 1
    # pip install ./bindings/python works and gives an importable package.
    if "$py" -c 'import setuptools, wheel' 2>/dev/null; then
        tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT
        cp -r "$pkg" "$tmp/src"     # pip builds in place: keep the tree clean
        "$py" -m pip install -q --no-deps --no-build-isolation --no-index \
            --target "$tmp/site" "$tmp/src" || { echo "pip install failed"; exit 1; }
        (cd "$tmp" && PYTHONPATH="$tmp/site" "$py" -c \
            'import foxjit, sys; print("installed:", foxjit.__file__, foxjit.version()); sys.exit(0 if foxjit.__file__.startswith(sys.argv[1]) else 1)' \
            "$tmp/site") || { echo "the installed package does not import"; exit 1; }
    else
        echo "setuptools or wheel is missing: pip install ./bindings/python was not tried"
    fi ;;
gpu)
    if ! "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' \
            2>/dev/null; then
        echo "SKIP: the Python GPU tests need torch with a CUDA GPU"
        [ "${FOXJIT_REQUIRE_GPU:-}" = 1 ] && exit 1
        exit 77
    fi
    run_tests test_gpu ;;
*)
    echo "usage: run_python.sh cpu|gpu SRC_ROOT" >&2; exit 2 ;;
esac
