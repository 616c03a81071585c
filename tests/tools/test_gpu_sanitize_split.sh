#!/bin/bash
# unit (no GPU): tools/gpu-sanitize.sh gives each test function of a split
# program its own checker run (FOXJIT_SANITIZE_SPLIT), names it
# program:function in the summary, stamps its log, passes the kernel
# exclusion on, runs a program whole when it is not split, sets CUDA API
# errors raised inside libnccl.so apart from the counted reports, runs the
# trainer's racecheck at quick level 2, pins runs to the GPUs round-robin
# and turns the GPU list of the multi-GPU tests from run to run.
# A fake compute-sanitizer runs the command it is given. Without a GPU the
# test programs fail under FOXJIT_REQUIRE_GPU=1 (racecheck here) or skip
# with 77 (synccheck: the fake clears FOXJIT_REQUIRE_GPU), so the run must
# end not clean, with every synccheck run counted as skipped. A
# FOXJIT_TEST_LIST or FOXJIT_TEST_ONLY left in the caller's environment
# must not reach the tests (they would list their names and pass).
#   test_gpu_sanitize_split.sh SCRIPT BUILD_DIR
set -u
script=$1 build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/cs" <<'FAKE'
#!/bin/bash
case ${1:-} in
    --version) echo "fake compute-sanitizer"; exit 0 ;;
    --help) echo "  --kernel-name-exclude arg"; exit 0 ;;
esac
echo "fake-cs args: $* (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset})"
tool=$2
while [ $# -gt 0 ] && [ "${1#--}" != "$1" ]; do shift 2; done
# One CUDA API error record: raised inside libnccl.so under synccheck (not
# counted; the test then skips), inside a fox-jit program under racecheck
# (counted; the test fails).
case $tool in
    synccheck) where="pncclCommInitRank [0x885ea] in libnccl.so.2"; export FOXJIT_REQUIRE_GPU=0 ;;
    *) where="ft_rank_comm_init in rank.c:39 [0xf6eb] in fox-train" ;;
esac
"$@"
rc=$?
cat <<REC
========= Program hit cudaErrorNoKernelImageForDevice (error 209) due to "no kernel image" on CUDA API call to cudaFuncGetAttributes.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame:  [0x4cb045] in libcuda.so.1
=========         Host Frame: $where
=========         Host Frame: rank_main in dp_train.c:273 [0xd42c] in fox-train
========= 
========= ERROR SUMMARY: 1 error
REC
[ "$tool" != racecheck ] || echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
exit $rc
FAKE
chmod +x "$tmp/cs"
failed=0
fail() { echo "FAIL: $*"; failed=1; }

listed=$(FOXJIT_TEST_LIST=1 "$build/tests/gpu_kloop")
n=$(grep -c . <<< "$listed")
out=$(env COMPUTE_SANITIZER="$tmp/cs" CUDA_VISIBLE_DEVICES=5,6 FOXJIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1 \
      FOXJIT_SANITIZE_TESTS="gpu_kloop gpu_colsum gpu_trainer gpu_multi_context" \
      FOXJIT_SANITIZE_SPLIT=gpu_kloop FOXJIT_SANITIZE_WARM=0 \
      FOXJIT_TEST_LIST=1 FOXJIT_TEST_ONLY=test_left_over \
      "$script" "$build" "$tmp/out" racecheck synccheck 2>&1)
rc=$?
[ $rc -ne 0 ] || fail "every racecheck run failed its test, yet exit 0: $out"
sum="$tmp/out/sanitize-summary.txt"
[ -f "$sum" ] || { echo "FAIL: no summary: $out"; exit 1; }
runs=$((n + 3))  # per checker: gpu_kloop split, colsum, trainer, multi_context whole
for tool in racecheck synccheck; do
    while IFS= read -r f; do
        grep -qE "^$tool +gpu_kloop:$f " "$sum" || fail "no $tool line for gpu_kloop:$f"
    done <<< "$listed"
    got=$(grep -cE "^$tool +gpu_kloop:" "$sum")
    [ "$got" -eq "$n" ] || fail "$tool: $got gpu_kloop runs, want one per test ($n)"
    grep -qE "^$tool +gpu_colsum +rc=" "$sum" || fail "$tool: gpu_colsum not run whole"
done
# The API error raised in libnccl.so is set apart (the run then is what the
# test made of it: a skip) and explained once; the one raised in fox-train
# is a report.
bad=$(grep -E "^synccheck " "$sum" | grep -vE "rc=77 +errors=0\+1nccl .* skipped \(")
[ -z "$bad" ] || fail "synccheck lines do not set the libnccl.so error apart: $bad"
grep -qF "errors=N+Mnccl: M CUDA API errors that libnccl.so raised and handled itself" "$sum" ||
    fail "no line explaining +Mnccl"
bad=$(grep -E "^racecheck " "$sum" | grep -vE "errors=1 .* 1 REPORTS: racecheck-gpu_[a-z0-9_-]+\.log$")
[ -z "$bad" ] || fail "racecheck lines do not count the fox-train API error: $bad"
tail -1 "$sum" | grep -qE "^gpu-sanitize: 0 of $((2 * runs)) checker runs clean, $runs skipped, $runs not clean" ||
    fail "last line: $(tail -1 "$sum")"
# racecheck runs quick (FOXJIT_SANITIZE_QUICK's default), the trainer's at
# level 2; synccheck runs the full tests.
grep -qE "^racecheck +gpu_trainer +rc=.* quick2 " "$sum" ||
    fail "racecheck of gpu_trainer not at level 2: $(grep gpu_trainer "$sum")"
bad=$(grep -E "^racecheck " "$sum" | grep -vE "^racecheck +gpu_trainer " | grep -vE " quick +[0-9]+ REPORTS")
[ -z "$bad" ] || fail "other racecheck runs not at quick level 1: $bad"
bad=$(grep -E "^synccheck " "$sum" | grep -vE " full +skipped")
[ -z "$bad" ] || fail "synccheck runs not full: $bad"
# Pinned runs alternate between GPUs 5 and 6; gpu_multi_context sees both,
# first 5,6 and then 6,5.
for d in 5 6; do
    grep -qE " dev=$d +" "$sum" || fail "no run pinned to GPU $d"
done
multi=$(grep -E "gpu_multi_context " "$sum" | sed -n 's/.* dev=\([0-9,]*\) .*/\1/p' | sort | paste -sd' ')
[ "$multi" = "5,6 6,5" ] || fail "gpu_multi_context's GPU lists: '$multi', want '5,6 6,5'"
mkdir "$tmp/logs" && tar -xzf "$tmp/out/sanitize-logs.tar.gz" -C "$tmp/logs"
f1=$(head -1 <<< "$listed")
log="$tmp/logs/racecheck-gpu_kloop--$f1.log"
[ -f "$log" ] || fail "no log $log: $(ls "$tmp/logs")"
grep -qE '^\[ *[0-9]+ s\] fake-cs args: --tool racecheck --kernel-name-exclude kns=nccl .*CUDA_VISIBLE_DEVICES=[56]\)$' "$log" ||
    fail "log not stamped, or the exclusion or the GPU not passed: $(head -3 "$log")"
grep -qF "running 1 of $n tests" "$log" || fail "the run was not limited to $f1: $(cat "$log")"
# program:function in FOXJIT_SANITIZE_TESTS runs that function alone, even
# with splitting off; a program named bare runs whole.
f2=$(sed -n 2p <<< "$listed")
env COMPUTE_SANITIZER="$tmp/cs" FOXJIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1 \
    FOXJIT_SANITIZE_TESTS="gpu_kloop:$f2 gpu_colsum gpu_kloop:$f2" FOXJIT_SANITIZE_SPLIT=none \
    FOXJIT_SANITIZE_WARM=0 "$script" "$build" "$tmp/pick" synccheck > /dev/null 2>&1
got=$(grep -E "^synccheck " "$tmp/pick/sanitize-summary.txt" | awk '{print $2}' | paste -sd' ')
[ "$got" = "gpu_colsum gpu_kloop:$f2" ] ||
    fail "FOXJIT_SANITIZE_TESTS=\"gpu_kloop:$f2 gpu_colsum\" ran '$got'"
[ $failed -eq 0 ] && echo "ok: $runs runs per checker, named, stamped, pinned, counted; functions picked"
exit $failed
