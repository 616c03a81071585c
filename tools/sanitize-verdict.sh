# Sourced by tools/gpu-sanitize.sh (and its test): reads the log of one
# compute-sanitizer run of a gpu test and decides what it showed. Kept apart
# so that every way a log can look is tested without a GPU
# (tests/tools/test_sanitize_verdict.sh).
#
#   sanitize_verdict TOOL LOG RC LIMIT
# prints "SHOWN|VERDICT": SHOWN is the reports counted ("-" when there is no
# summary), with "+Mnccl" and "+Pprobe" for the ones set apart; VERDICT is "clean",
# "skipped (...)" or a word in capitals that says what is wrong. Only
# "clean" and "skipped (" count as a good run.
#
# The rules, strictest first:
#  - status 124 (timeout) or 137 (killed: timeout's second signal, or out of
#    memory): TIMEOUT or KILLED.
#  - "Internal Sanitizer Error" or "========= Error:" anywhere: the checker
#    itself failed, so its summary proves nothing: SANITIZER ERROR.
#  - no summary of this checker (racecheck: "RACECHECK SUMMARY: N hazards
#    displayed (E errors, W warnings)"; the others: "ERROR SUMMARY: N
#    errors"): NO SUMMARY.
#  - reports: every summary line of the log is added up (one per tracked
#    process, if the tool ever prints several), racecheck's warnings count
#    too. CUDA API errors that NCCL raised and handled itself are set apart:
#    error 209 (cudaErrorNoKernelImageForDevice, ncclCommInitRank probing
#    kernels built for other GPUs) or 704 (cudaErrorPeerAccessAlreadyEnabled)
#    whose first host frame under the driver is in libnccl.so; and fox-jit's
#    own kernel-argument probe: cuFuncGetParamInfo asked for the parameter
#    one past a kernel's last answers CUDA_ERROR_INVALID_VALUE (error 1) by
#    design (runtime/modules/module_cache.c, check_kernel_args, inlined into
#    load_module), which is how the probe knows the kernel has no more. Any
#    other report, one without a backtrace, and one past the print limit
#    counts.
#    More set apart than the summary counts: INCONSISTENT.
#  - then the test's own status: 77 skipped, not 0 failed; 0 but nothing
#    ran (no "running on" line from tests/common/gpu_harness.c, e.g. a stray
#    FOXJIT_TEST_LIST=1): NOTHING RAN; every test it ran skipped itself:
#    skipped; else clean.

# sanitize_api_errors_from HIT FRAME LOG: the records of CUDA API errors
# whose "Program hit" line matches the ERE HIT and whose first host frame
# under the driver matches the ERE FRAME. (The patterns go in through the
# environment: awk -v would process their backslashes.)
sanitize_api_errors_from() {
    HIT=$1 FRAME=$2 awk '$0 ~ ENVIRON["HIT"] { rec = 1; decided = 0; next }
         /Program hit / { rec = 0; next }
         rec && !decided && /Host Frame:/ {
             if ($0 ~ / in libcuda\.so/) next
             decided = 1
             if ($0 ~ ENVIRON["FRAME"]) n++
             next }
         /========= *$/ { rec = 0 }
         END { print n + 0 }' "$3"
}

# Records of CUDA API errors 209 and 704 raised inside libnccl.so.
sanitize_nccl_api_errors() {
    sanitize_api_errors_from 'Program hit [A-Za-z_]+ \(error (209|704)\) .* on CUDA API call to' \
        ' in libnccl\.so' "$1"
}

# Records of the kernel-argument probe's expected error: error 1 on
# cuFuncGetParamInfo whose first host frame under the driver is
# check_kernel_args or load_module (where the compiler may inline it).
sanitize_probe_api_errors() {
    sanitize_api_errors_from \
        'Program hit CUDA_ERROR_INVALID_VALUE \(error 1\) .* on CUDA API call to cuFuncGetParamInfo\.' \
        'Host Frame: (check_kernel_args|load_module)[ (]' "$1"
}

# The sum of the log's "ERROR SUMMARY: N errors" lines ("" when none); the
# "N errors were not printed" lines are not summaries.
sanitize_error_summary() {
    awk 'match($0, /ERROR SUMMARY: [0-9]+ errors?$/) {
             split(substr($0, RSTART + 15), f, " "); n += f[1]; seen = 1 }
         END { if (seen) print n }' "$1"
}

# The sum of errors and warnings of the log's racecheck summaries ("" when none).
sanitize_race_summary() {
    awk 'match($0, /RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ errors?, [0-9]+ warnings?\)/) {
             s = substr($0, RSTART, RLENGTH); sub(/.*\(/, "", s)
             split(s, f, " "); n += f[1] + f[3]; seen = 1 }
         END { if (seen) print n }' "$1"
}

sanitize_verdict() {
    local tool=$1 log=$2 rc=$3 limit=$4 reports summary race nccl=0 probe=0 odd= shown verdict
    summary=$(sanitize_error_summary "$log")
    if [ "$tool" = racecheck ]; then
        race=$(sanitize_race_summary "$log")
        reports=
        [ -n "$race" ] && reports=$((race + ${summary:-0}))
    else
        reports=$summary
    fi
    if [ -n "$reports" ] && [ "$reports" != 0 ]; then
        nccl=$(sanitize_nccl_api_errors "$log")
        probe=$(sanitize_probe_api_errors "$log")
    fi
    shown=${reports:--}
    if [ -n "$reports" ] && [ $((nccl + probe)) -gt 0 ]; then
        if [ $((nccl + probe)) -le "$reports" ]; then
            reports=$((reports - nccl - probe))
            shown=$reports
            [ "$nccl" -gt 0 ] && shown="$shown+${nccl}nccl"
            [ "$probe" -gt 0 ] && shown="$shown+${probe}probe"
        else
            odd="$((nccl + probe)) API errors set apart, more than the $reports in the summary"
        fi
    fi
    if [ "$rc" -eq 124 ]; then
        verdict="TIMEOUT after $limit s"
    elif [ "$rc" -eq 137 ]; then
        verdict="KILLED (after $limit s, or out of memory)"
    elif grep -qE 'Internal Sanitizer Error|========= Error:' "$log"; then
        verdict="SANITIZER ERROR (the checker failed; its summary proves nothing)"
    elif [ -z "$reports" ]; then
        verdict="NO SUMMARY"
    elif [ -n "$odd" ]; then
        verdict="INCONSISTENT ($odd)"
    elif [ "$reports" != 0 ]; then
        verdict="$reports REPORTS"
    elif [ "$rc" -eq 77 ]; then
        verdict="skipped (the test needs what this machine lacks)"
    elif [ "$rc" -ne 0 ]; then
        verdict="test failed (status $rc)"
    elif ! grep -qF ': running on ' "$log"; then
        verdict="NOTHING RAN (no 'running on' line from the test program)"
    elif grep -qF '[  PASSED  ] 0 test(s).' "$log" && grep -qF '[  SKIPPED ]' "$log"; then
        verdict="skipped (every test it ran skipped itself)"
    else
        verdict="clean"
    fi
    printf '%s|%s\n' "$shown" "$verdict"
}
