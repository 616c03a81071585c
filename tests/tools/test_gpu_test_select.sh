#!/bin/bash
# unit (no GPU): a gpu test program lists its tests with FOXJIT_TEST_LIST=1
# (names only, nothing run), runs only the ones FOXJIT_TEST_ONLY names, and
# refuses a name it does not have (status 1, a message naming it), so a
# typo cannot pass by running nothing. The driver is hidden
# (FOXJIT_CUDA_LIBRARY), so a selected test reaches the skip (77).
#   test_gpu_test_select.sh GPU_TEST_PROGRAM
set -u
prog=$1
export FOXJIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1 FOXJIT_REQUIRE_GPU=0
failed=0
fail() { echo "FAIL: $*"; failed=1; }

names=$(FOXJIT_TEST_LIST=1 "$prog" 2>/dev/null); rc=$?
[ $rc -eq 0 ] || fail "FOXJIT_TEST_LIST=1: exit $rc: $names"
count=$(grep -c . <<< "$names")
[ "$count" -ge 2 ] || fail "FOXJIT_TEST_LIST=1 listed $count tests: $names"
grep -qvE '^test_[A-Za-z0-9_]+$' <<< "$names" && fail "FOXJIT_TEST_LIST=1 printed more than names: $names"
note=$(FOXJIT_TEST_LIST=1 "$prog" 2>&1 >/dev/null)
grep -qF "listing the tests, running none" <<< "$note" || fail "no note on stderr when listing: '$note'"
first=$(head -1 <<< "$names"); last=$(tail -1 <<< "$names")
echo "ok: $count tests listed ($first .. $last)"

out=$(FOXJIT_TEST_ONLY="$last $first" "$prog" 2>&1); rc=$?
[ $rc -eq 77 ] || fail "FOXJIT_TEST_ONLY=2 names, no driver: exit $rc, want 77: $out"
grep -qF "running 2 of $count tests (FOXJIT_TEST_ONLY): $first $last" <<< "$out" ||
    fail "not 'running 2 of $count tests (FOXJIT_TEST_ONLY): $first $last' (program order): $out"
echo "ok: FOXJIT_TEST_ONLY keeps $first and $last in the program's order, then skips without a driver"

# A name must match whole: a prefix of a test's name is not that test.
prefix=${first%_*}
out=$(FOXJIT_TEST_ONLY="$prefix" "$prog" 2>&1); rc=$?
[ $rc -eq 1 ] && grep -qF "'$prefix', which is not one of its tests" <<< "$out" ||
    fail "the prefix '$prefix' of $first: exit $rc, want 1 and a refusal: $out"
echo "ok: a prefix of a name is refused"

out=$(FOXJIT_TEST_ONLY="$first,test_no_such_thing" "$prog" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "an unknown name: exit $rc, want 1: $out"
grep -qF "'test_no_such_thing', which is not one of its tests" <<< "$out" ||
    fail "an unknown name: no message naming it: $out"
grep -q "SKIP" <<< "$out" && fail "an unknown name went on to the GPU set-up: $out"
echo "ok: an unknown name is refused"

out=$(FOXJIT_TEST_ONLY=" , " "$prog" 2>&1); rc=$?
[ $rc -eq 1 ] || fail "FOXJIT_TEST_ONLY of separators only: exit $rc, want 1: $out"
grep -qF "names no test" <<< "$out" || fail "separators only: no message: $out"
echo "ok: a selection naming nothing is refused"
exit $failed
