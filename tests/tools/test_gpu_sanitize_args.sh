#!/bin/bash
# unit (no GPU): tools/gpu-sanitize.sh refuses bad settings with exit status
# 2 and a message naming the setting, before it runs any checker (the fake
# compute-sanitizer below fails the test if it is ever called).
#   test_gpu_sanitize_args.sh SCRIPT BUILD_DIR
set -u
script=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#!/bin/sh\necho "the fake compute-sanitizer ran" >&2\nexit 99\n' > "$tmp/cs"
chmod +x "$tmp/cs"
failed=0
expect_refusal() { # needle env-assignments...
    local needle=$1 out rc
    shift
    local checkers=()
    case $1 in CHECKERS=*) checkers=("${1#CHECKERS=}"); shift ;; esac
    out=$(env COMPUTE_SANITIZER="$tmp/cs" "$@" "$script" "$build" "$tmp/out" "${checkers[@]}" 2>&1)
    rc=$?
    if [ $rc -ne 2 ] || ! grep -qF -- "$needle" <<< "$out"; then
        echo "FAIL: $*: exit $rc, want 2 and a message with '$needle'; got: $out"
        failed=1
    else
        echo "ok: $*: $needle"
    fi
}
expect_refusal "give a number of GPUs" FOXJIT_SANITIZE_GPUS=two
expect_refusal "unknown checker 'racechek'" CHECKERS=racechek
expect_refusal "names gpu_nosuch, not in this build's gpu suite" FOXJIT_SANITIZE_TESTS="gpu_colsum gpu_nosuch"
expect_refusal "names gpu_nosuch, not in this build's gpu suite" FOXJIT_SANITIZE_TESTS="gpu_nosuch:test_a"
expect_refusal "gpu_colsum has no test function 'test_nosuch'" FOXJIT_SANITIZE_TESTS="gpu_colsum:test_nosuch"
expect_refusal "'gpu_colsum:' is not program or program:function" FOXJIT_SANITIZE_TESTS="gpu_colsum:"
expect_refusal "only 2 GPU(s) are visible" CUDA_VISIBLE_DEVICES=0,1 FOXJIT_SANITIZE_GPUS=3
# An empty CUDA_VISIBLE_DEVICES hides every GPU; it is not "unset".
expect_refusal "only 0 GPU(s) are visible" CUDA_VISIBLE_DEVICES= FOXJIT_SANITIZE_GPUS=1
expect_refusal "'racechek' is not a checker" FOXJIT_SANITIZE_QUICK=racechek
expect_refusal "'yes' is not a checker" FOXJIT_SANITIZE_QUICK=racecheck,yes
expect_refusal "'perception' is not a gpu test name" FOXJIT_SANITIZE_SPLIT="gpu_kloop perception"
expect_refusal "'gpu_rank;' is not a gpu test name" FOXJIT_SANITIZE_SPLIT="gpu_rank;"
exit $failed
