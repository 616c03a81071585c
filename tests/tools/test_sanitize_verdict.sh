#!/bin/bash
# unit (no GPU): tools/sanitize-verdict.sh on crafted compute-sanitizer logs,
# one for each rule it has: a run counts as clean only when the checker's
# own summary says 0 (racecheck's warnings and every summary line of the
# log added up), the checker did not fail itself, the test program ran its
# tests and passed; NCCL's own API errors 209 and 704 and fox-jit's
# kernel-argument probe's error 1 are set apart, and nothing else is.
#   test_sanitize_verdict.sh tools/sanitize-verdict.sh
set -u
# Each case pipes its log into expect: without lastpipe, expect would run
# in a subshell and its failed=1 would be lost (the test could not fail).
shopt -s lastpipe
. "$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
ran='[   2 s] gpu/x: running on NVIDIA H200 (sm_90), seed 1
[   2 s] [==========] Running 1 test(s).
[   3 s] [  PASSED  ] 1 test(s).'
nccl_record() { # error-code error-name api frame
    printf '[   1 s] ========= Program hit %s (error %s) due to "x" on CUDA API call to %s.\n' "$2" "$1" "$3"
    printf '[   1 s] =========     Saved host backtrace up to driver entry point at error\n'
    printf '[   1 s] =========         Host Frame:  [0x4cb045] in libcuda.so.1\n'
    printf '[   1 s] =========         Host Frame: %s\n' "$4"
    printf '[   1 s] =========         Host Frame: rank_main in dp_train.c:273 [0xd42c] in fox-train\n'
    printf '[   1 s] ========= \n'
}
in_nccl='pncclCommInitRank [0x885ea] in libnccl.so.2'
in_ours='ft_rank_comm_init in rank.c:39 [0xf6eb] in fox-train'
# expect NAME TOOL RC WANT-SHOWN WANT-VERDICT-PREFIX < log
expect() {
    local name=$1 tool=$2 rc=$3 want_shown=$4 want=$5 got shown verdict
    cat > "$tmp/log"
    got=$(sanitize_verdict "$tool" "$tmp/log" "$rc" 540)
    shown=${got%%|*} verdict=${got#*|}
    if [ "$shown" != "$want_shown" ] || [ "${verdict#"$want"}" = "$verdict" ]; then
        echo "FAIL: $name: got '$shown' '$verdict', want '$want_shown' '$want...'"
        failed=1
    else
        echo "ok: $name: $shown | $verdict"
    fi
}

printf '%s\n[   4 s] ========= ERROR SUMMARY: 0 errors\n' "$ran" |
    expect "memcheck, 0 errors, passed" memcheck 0 0 clean
printf '%s\n[   4 s] ========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)\n' "$ran" |
    expect "racecheck, 0 hazards, passed" racecheck 0 0 clean
printf '%s\n[   4 s] ========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)\n' "$ran" |
    expect "racecheck, one hazard (singular words)" racecheck 0 1 "1 REPORTS"
printf '%s\n[   4 s] ========= RACECHECK SUMMARY: 3 hazards displayed (0 errors, 3 warnings)\n' "$ran" |
    expect "racecheck warnings count" racecheck 0 3 "3 REPORTS"
printf '%s\n[ 4 s] ========= ERROR SUMMARY: 0 errors\n[ 4 s] ========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)\n' "$ran" |
    expect "racecheck: its own summary wins over ERROR SUMMARY 0" racecheck 0 2 "2 REPORTS"
printf '%s\n[   4 s] ========= ERROR SUMMARY: 0 errors\n' "$ran" |
    expect "racecheck without its summary" racecheck 0 - "NO SUMMARY"
printf '%s\n' "$ran" | expect "memcheck without a summary" memcheck 0 - "NO SUMMARY"
printf '%s\n[ 4 s] ========= ERROR SUMMARY: 0 errors\n[ 9 s] ========= ERROR SUMMARY: 2 errors\n' "$ran" |
    expect "every summary line is added" memcheck 0 2 "2 REPORTS"
printf '%s\n[ 4 s] ========= ERROR SUMMARY: 1 errors were not printed. Use --print-limit\n[ 4 s] ========= ERROR SUMMARY: 0 errors\n' "$ran" |
    expect "'were not printed' is not a summary" memcheck 0 0 clean
printf '%s\n[ 3 s] ========= Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception.\n[ 4 s] ========= ERROR SUMMARY: 0 errors\n' "$ran" |
    expect "the checker failed itself" racecheck 0 - "SANITIZER ERROR"
printf '%s\n[ 3 s] ========= Error: Target application terminated before first instrumented API call\n[ 4 s] ========= ERROR SUMMARY: 0 errors\n' "$ran" |
    expect "a checker error line" memcheck 0 0 "SANITIZER ERROR"
printf '%s\n[   4 s] ========= ERROR SUMMARY: 0 errors\n' "$ran" |
    expect "timeout" memcheck 124 0 "TIMEOUT after 540 s"
printf '%s\n' "$ran" | expect "killed" memcheck 137 - "KILLED"
printf '%s\n[   4 s] ========= ERROR SUMMARY: 0 errors\n' "$ran" |
    expect "the test failed" memcheck 1 0 "test failed (status 1)"
printf '[ 1 s] gpu/x: SKIP: no usable GPU\n[   4 s] ========= ERROR SUMMARY: 0 errors\n' |
    expect "the test skipped" memcheck 77 0 "skipped ("
printf '[ 1 s] test_a\n[ 1 s] test_b\n[   4 s] ========= ERROR SUMMARY: 0 errors\n' |
    expect "a program that only listed its tests" memcheck 0 0 "NOTHING RAN"
printf '[ 2 s] gpu/x: running on H200\n[ 3 s] [  SKIPPED ] test_a\n[ 3 s] [  PASSED  ] 0 test(s).\n[ 3 s] [  SKIPPED ] 1 test(s), listed below:\n[   4 s] ========= ERROR SUMMARY: 0 errors\n' |
    expect "every test skipped itself" memcheck 0 0 "skipped (every test"
{ printf '%s\n' "$ran"; nccl_record 209 cudaErrorNoKernelImageForDevice cudaFuncGetAttributes "$in_nccl"
  nccl_record 704 cudaErrorPeerAccessAlreadyEnabled cudaGetLastError "$in_nccl"
  printf '[ 4 s] ========= ERROR SUMMARY: 2 errors\n'; } |
    expect "NCCL's own API errors are set apart" memcheck 0 0+2nccl clean
{ printf '%s\n' "$ran"; nccl_record 209 cudaErrorNoKernelImageForDevice cudaFuncGetAttributes "$in_ours"
  printf '[ 4 s] ========= ERROR SUMMARY: 1 error\n'; } |
    expect "the same error raised in fox-train counts" memcheck 0 1 "1 REPORTS"
{ printf '%s\n' "$ran"; nccl_record 700 cudaErrorIllegalAddress cudaStreamSynchronize "$in_nccl"
  printf '[ 4 s] ========= ERROR SUMMARY: 1 error\n'; } |
    expect "another error inside libnccl.so counts" memcheck 0 1 "1 REPORTS"
{ printf '%s\n' "$ran"; nccl_record 209 cudaErrorNoKernelImageForDevice cudaFuncGetAttributes "$in_nccl"
  nccl_record 209 cudaErrorNoKernelImageForDevice cudaFuncGetAttributes "$in_nccl"
  printf '[ 4 s] ========= ERROR SUMMARY: 1 error\n'; } |
    expect "more set apart than summarized" memcheck 0 1 "INCONSISTENT"
{ printf '%s\n' "$ran"; nccl_record 209 cudaErrorNoKernelImageForDevice cudaFuncGetAttributes "$in_nccl"
  printf '[ 4 s] ========= Invalid __global__ read of size 4 bytes\n[ 4 s] ========= \n'
  printf '[ 4 s] ========= ERROR SUMMARY: 2 errors\n'; } |
    expect "a device report next to NCCL's" memcheck 0 1+1nccl "1 REPORTS"
probe_record() { # api frame
    printf '[   1 s] ========= Program hit CUDA_ERROR_INVALID_VALUE (error 1) due to "invalid argument" on CUDA API call to %s.\n' "$1"
    printf '[   1 s] =========     Saved host backtrace up to driver entry point at error\n'
    printf '[   1 s] =========         Host Frame: %s\n' "$2"
    printf '[   1 s] =========         Host Frame: fj_module_get [0x24acc] in libfoxjit.so.1\n'
    printf '[   1 s] ========= \n'
}
{ printf '%s\n' "$ran"; probe_record cuFuncGetParamInfo 'load_module [0x243eb] in gpu_heads_seq'
  probe_record cuFuncGetParamInfo 'check_kernel_args (module_cache.c:61) [0x2401b] in libfoxjit.so.1'
  printf '[ 4 s] ========= ERROR SUMMARY: 2 errors\n'; } |
    expect "the kernel-argument probe's errors are set apart" memcheck 0 0+2probe clean
{ printf '%s\n' "$ran"; probe_record cuFuncGetParamInfo 'load_module [0x243eb] in gpu_heads_seq'
  nccl_record 209 cudaErrorNoKernelImageForDevice cudaFuncGetAttributes "$in_nccl"
  printf '[ 4 s] ========= ERROR SUMMARY: 2 errors\n'; } |
    expect "both kinds set apart" memcheck 0 0+1nccl+1probe clean
{ printf '%s\n' "$ran"; probe_record cuFuncGetParamInfo 'fj_launch [0x1b2c0] in libfoxjit.so.1'
  printf '[ 4 s] ========= ERROR SUMMARY: 1 error\n'; } |
    expect "the same error from elsewhere counts" memcheck 0 1 "1 REPORTS"
{ printf '%s\n' "$ran"; probe_record cuModuleGetFunction 'load_module [0x243eb] in gpu_heads_seq'
  printf '[ 4 s] ========= ERROR SUMMARY: 1 error\n'; } |
    expect "another call's error in load_module counts" memcheck 0 1 "1 REPORTS"
{ printf '%s\n' "$ran"; probe_record cuFuncGetParamInfo 'load_module [0x243eb] in gpu_heads_seq'
  printf '[ 4 s] ========= ERROR SUMMARY: 56 errors\n[ 4 s] ========= ERROR SUMMARY: 55 errors were not printed.\n'; } |
    expect "probe errors past the print limit count" memcheck 0 55+1probe "55 REPORTS"
exit $failed
