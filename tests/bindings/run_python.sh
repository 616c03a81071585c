#!/bin/bash
# run_python.sh cpu|gpu SRC_ROOT: the Python package's tests, from the
# source tree (PYTHONPATH) against this build's library. cpu: the no-GPU
# tests; gpu: the GPU tests (exit 77 without torch or a GPU). pytest runs them when it is
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
    # (The installed package, from the wheel, is run_wheel.sh's.)
    run_tests test_nogpu ;;
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
