#!/bin/bash
# Runs every GPU test of a build under compute-sanitizer's four checkers
# (memcheck with leak checking, racecheck, initcheck, synccheck) on the local
# GPUs, one run per checker and test function (FOXJIT_SANITIZE_SPLIT), and
# prints one line per run (its reports, time, GPU, and whether the test ran
# full or quick, see FOXJIT_SANITIZE_QUICK). tools/sanitize-verdict.sh reads
# each log; docs/reliability.md says how.
# Used on a GPU machine with a build made elsewhere, like tools/gpu-check.sh:
#   tools/gpu-sanitize.sh BUILD_DIR OUT_DIR [TOOL...]
# TOOL is any of memcheck racecheck initcheck synccheck (default: all four).
# Several GPUs: the runs are spread over them round-robin, each pinned to one
# with CUDA_VISIBLE_DEVICES (dev=N in its line), except gpu_multi_context and
# gpu_trainer_multi_gpu, which want several GPUs and see all of them, in an
# order that turns from run to run (dev=1,2,3,0: their first GPU differs);
# NCCL_NVLS_ENABLE=0 keeps NVLink multicast off, as in tools/gpu-multi.sh.
# With one GPU nothing is pinned.
# Environment:
#   FOXJIT_SANITIZE_TESTS    gpu tests to run, by name (default: the whole gpu suite,
#                            read from BUILD_DIR/meson-info with its arguments);
#                            program:function runs only that function of the
#                            program (split whatever FOXJIT_SANITIZE_SPLIT says),
#                            e.g. "gpu_colsum gpu_trainer:test_resume_bitwise"
#   FOXJIT_SANITIZE_SPLIT    which test programs run one checker run per test
#                            function (FOXJIT_TEST_ONLY=name; the line says
#                            program:function): all (default), none, or names.
#                            Short runs spread over the GPUs and jobs, and a slow
#                            function gets the whole time limit to itself.
#   FOXJIT_SANITIZE_SKIP_KERNELS  kernels left unchecked, by name substring
#                            (--kernel-name-exclude kns=...; default "nccl": NCCL's
#                            own kernels, which are not ours and wait on the other
#                            GPU's); empty = check every kernel
#   FOXJIT_SANITIZE_GPUS     how many GPUs to spread the runs over, N: the first N
#                            entries of CUDA_VISIBLE_DEVICES when it is set, else
#                            devices 0..N-1 (default: all of them, counted by
#                            CUDA_VISIBLE_DEVICES or nvidia-smi -L; 0 or 1 pins nothing)
#   FOXJIT_SANITIZE_JOBS     checker runs at once (default 4 per GPU)
#   FOXJIT_SANITIZE_TIMEOUT  seconds one run may take (default 540)
#   FOXJIT_SANITIZE_QUICK    which checkers run the tests in their quick mode
#                            (FOXJIT_TEST_QUICK=1: every case and kernel variant,
#                            smaller batches and sequences, fewer repetitions; see
#                            docs/reliability.md): 1 (default) = racecheck only,
#                            which instruments every shared-memory access and is
#                            far the slowest; all = every checker; 0 or none = none; or a
#                            list of checkers ("racecheck initcheck"). The other
#                            runs get FOXJIT_TEST_QUICK=0 (the full tests).
#                            racecheck of the trainer programs runs at level 2
#                            (FOXJIT_TEST_QUICK=2, "quick2": fox-train runs of 1-3
#                            steps; see quick_level below).
#   FOXJIT_SANITIZE_WARM     0: skip warming the shared cache first (the tests
#                            then compile what they use; for the script's own test)
#   COMPUTE_SANITIZER        the compute-sanitizer to use
# Writes OUT_DIR/sanitize-summary.txt (the lines below) and
# OUT_DIR/sanitize-logs.tar.gz (the full output of every run, each line
# stamped with the seconds since its run began; one archive so it comes
# back from the device machine). Exit status 0 only when every run is
# "clean" (0 reports counted, the test ran and passed) or "skipped" (status
# 77, e.g. a multi-GPU test on one GPU), and every run wrote its line.
set -u
B=$(cd "$1" && pwd); OUT=$2; shift 2
tools=("$@")
[ ${#tools[@]} -gt 0 ] || tools=(memcheck racecheck initcheck synccheck)
for t in "${tools[@]}"; do
    case $t in memcheck|racecheck|initcheck|synccheck) ;;
        *) echo "gpu-sanitize: unknown checker '$t' (memcheck racecheck initcheck synccheck)" >&2
           exit 2 ;;
    esac
done
# Left set, it would make every test program list its names and pass.
unset FOXJIT_TEST_LIST FOXJIT_TEST_ONLY
. "$(dirname "$0")/sanitize-verdict.sh"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# FOXJIT_TEST_LIB_DIR: a directory of shared libraries the test programs
# need and the machine lacks (libcmocka.so.0 on a GPU host without the
# package), searched first.
if [ -n "${FOXJIT_TEST_LIB_DIR:-}" ]; then
    export LD_LIBRARY_PATH="$FOXJIT_TEST_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export FOXJIT_REQUIRE_GPU=1
export FOXJIT_LOG=warn
export NCCL_NVLS_ENABLE=0

cs=${COMPUTE_SANITIZER:-}
for c in "$cs" "$(command -v compute-sanitizer 2>/dev/null)" \
         "${CUDA_HOME:-/usr/local/cuda}/bin/compute-sanitizer" \
         /usr/local/cuda/compute-sanitizer/compute-sanitizer; do
    if [ -n "$c" ] && [ -x "$c" ]; then cs=$c; break; fi
done
if [ -z "$cs" ] || [ ! -x "$cs" ]; then
    echo "gpu-sanitize: compute-sanitizer not found; set COMPUTE_SANITIZER" >&2
    exit 2
fi

# program:function words need both halves (a bare "gpu_x:" would run it whole).
read -r -a words <<< "${FOXJIT_SANITIZE_TESTS:-}"
for w in "${words[@]}"; do
    case $w in *:|:*|*:*:*)
        echo "gpu-sanitize: FOXJIT_SANITIZE_TESTS: '$w' is not program or program:function" \
             "(e.g. gpu_trainer:test_resume_bitwise)" >&2
        exit 2 ;;
    esac
done

# The gpu suite's commands (with their arguments) from meson's test list,
# build paths mapped onto BUILD_DIR; without it, every tests/gpu_* binary.
cmds=()
if [ -f "$B/meson-info/intro-tests.json" ] && command -v python3 >/dev/null 2>&1; then
    missing=()
    while IFS= read -r line; do
        case $line in '!'*) missing+=("${line#!}") ;; *) cmds+=("$line") ;; esac
    done < <(python3 - "$B" <<'PY'
import json, os, shlex, sys
b = sys.argv[1]
info = json.load(open(os.path.join(b, "meson-info", "meson-info.json")))
old = info["directories"]["build"]
want = [w.split(":", 1)[0] for w in os.environ.get("FOXJIT_SANITIZE_TESTS", "").split()]
found = set()
for t in json.load(open(os.path.join(b, "meson-info", "intro-tests.json"))):
    if not any(s.endswith(":gpu") or s == "gpu" for s in t["suite"]):
        continue
    if want and t["name"] not in want:
        continue
    found.add(t["name"])
    argv = [a.replace(old, b, 1) if a.startswith(old) else a for a in t["cmd"]]
    print(" ".join(shlex.quote(a) for a in argv))
for w in want:
    if w not in found:
        print("!" + w)
PY
)
    if [ ${#missing[@]} -gt 0 ]; then
        echo "gpu-sanitize: FOXJIT_SANITIZE_TESTS names ${missing[*]}, not in this build's" \
             "gpu suite" >&2
        exit 2
    fi
else
    for t in "$B"/tests/gpu_*; do
        name=$(basename "$t")
        if [ -n "${FOXJIT_SANITIZE_TESTS:-}" ]; then
            case " $FOXJIT_SANITIZE_TESTS " in *" $name "*|*" $name:"*) ;; *) continue ;; esac
        fi
        [ -x "$t" ] && [ -f "$t" ] && cmds+=("$(printf '%q' "$t")")
    done
fi
[ ${#cmds[@]} -gt 0 ] || { echo "gpu-sanitize: no gpu test to run in $B" >&2; exit 2; }

# The GPUs to spread the runs over (CUDA_VISIBLE_DEVICES values), numbered
# as nvidia-smi does (PCI order).
export CUDA_DEVICE_ORDER=PCI_BUS_ID
devs=()
if [ -n "${CUDA_VISIBLE_DEVICES+x}" ]; then
    # Set, even empty (= no GPU): the caller's choice is kept.
    IFS=', ' read -r -a devs <<< "$CUDA_VISIBLE_DEVICES"
else
    n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    for ((i = 0; i < n; i++)); do devs+=("$i"); done
fi
if [ -n "${FOXJIT_SANITIZE_GPUS:-}" ]; then
    case $FOXJIT_SANITIZE_GPUS in
        *[!0-9]*) echo "gpu-sanitize: FOXJIT_SANITIZE_GPUS is '$FOXJIT_SANITIZE_GPUS';" \
                       "give a number of GPUs" >&2; exit 2 ;;
    esac
    want=$((10#$FOXJIT_SANITIZE_GPUS))
    if [ "$want" -gt ${#devs[@]} ]; then
        echo "gpu-sanitize: FOXJIT_SANITIZE_GPUS is $want but only ${#devs[@]} GPU(s) are" \
             "visible (${devs[*]:-none})" >&2
        exit 2
    fi
    devs=("${devs[@]:0:want}")
fi
gpus=${#devs[@]}
[ "$gpus" -ge 1 ] || gpus=1
# Runs that may use every GPU (dev "all") see only the chosen ones.
[ ${#devs[@]} -gt 0 ] && CUDA_VISIBLE_DEVICES=$(IFS=,; echo "${devs[*]}") && export CUDA_VISIBLE_DEVICES

# FOXJIT_SANITIZE_QUICK words must name checkers (a typo would run full).
case ${FOXJIT_SANITIZE_QUICK:-1} in
    1|0|none|all) ;;
    *) read -r -a words <<< "${FOXJIT_SANITIZE_QUICK//,/ }"
       for w in "${words[@]}"; do
           case $w in memcheck|racecheck|initcheck|synccheck) ;;
               *) echo "gpu-sanitize: FOXJIT_SANITIZE_QUICK: '$w' is not a checker" \
                       "(memcheck racecheck initcheck synccheck; or 1, all, 0, none)" >&2
                  exit 2 ;;
           esac
       done ;;
esac

split=${FOXJIT_SANITIZE_SPLIT-all}
case $split in
    all|none|0|'') ;;
    *) read -r -a words <<< "${split//,/ }"
       for w in "${words[@]}"; do
           case $w in gpu_*[!A-Za-z0-9_]*|gpu_) bad=1 ;; gpu_*) bad= ;; *) bad=1 ;; esac
           if [ -n "$bad" ]; then
               echo "gpu-sanitize: FOXJIT_SANITIZE_SPLIT: '$w' is not a gpu test name" \
                    "(all, none, or names such as gpu_cfc)" >&2
               exit 2
           fi
       done ;;
esac

# The test's name (its binary's) from its command.
name_of() {
    eval "set -- $1"
    basename "$1"
}

# The test functions of a test command (FOXJIT_TEST_LIST=1), one a line;
# nothing when the program cannot list them (then it runs whole).
functions_of() {
    local out
    out=$(eval "FOXJIT_TEST_LIST=1 timeout 30 $1" 2>/dev/null) || return 0
    # Only names: a program that ignored FOXJIT_TEST_LIST would have run its tests.
    grep -qvE '^test_[A-Za-z0-9_]+$' <<< "$out" && return 0
    printf '%s\n' "$out"
}

# 1 when the test program's functions get a run each (FOXJIT_SANITIZE_SPLIT).
split_for() {
    case $split in
        all) true ;;
        none|0|'') false ;;
        *) case " ${split//,/ } " in *" $1 "*) true ;; *) false ;; esac ;;
    esac
}

# The functions FOXJIT_SANITIZE_TESTS picks out of one program (its
# program:function words), one a line; nothing when it names the program
# whole or not at all.
picked_of() { # program
    local w words
    case " ${FOXJIT_SANITIZE_TESTS:-} " in *" $1 "*) return 0 ;; esac
    read -r -a words <<< "${FOXJIT_SANITIZE_TESTS:-}"
    for w in "${words[@]}"; do
        case $w in "$1":*) printf '%s\n' "${w#*:}" ;; esac
    done | awk '!seen[$0]++'
}
fns=()
for i in "${!cmds[@]}"; do
    fns[i]=
    name=$(name_of "${cmds[i]}")
    picked=$(picked_of "$name")
    if [ -n "$picked" ]; then
        all_fns=$(functions_of "${cmds[i]}")
        while IFS= read -r f; do
            if ! grep -qxF -- "$f" <<< "$all_fns"; then
                echo "gpu-sanitize: FOXJIT_SANITIZE_TESTS names $name:$f, but $name has no" \
                     "test function '$f' (FOXJIT_TEST_LIST=1 $name lists them)" >&2
                exit 2
            fi
        done <<< "$picked"
        fns[i]=$picked
    elif split_for "$name"; then
        fns[i]=$(functions_of "${cmds[i]}")
    fi
done

# NCCL's kernels left unchecked (when this compute-sanitizer can).
skip_kernels=${FOXJIT_SANITIZE_SKIP_KERNELS-nccl}
exclude=()
if [ -n "$skip_kernels" ]; then
    if "$cs" --help 2>&1 | grep -q -- '--kernel-name-exclude'; then
        read -r -a words <<< "${skip_kernels//,/ }"
        for k in "${words[@]}"; do exclude+=(--kernel-name-exclude "kns=$k"); done
    else
        echo "gpu-sanitize: this compute-sanitizer has no --kernel-name-exclude;" \
             "FOXJIT_SANITIZE_SKIP_KERNELS ($skip_kernels) ignored" >&2
    fi
fi

# One warm cache for every run, so the checkers time kernels, not NVRTC.
export FOXJIT_TEST_CACHE_DIR=/tmp/foxjit-sanitize-cache
export FOXJIT_CACHE_DIR=$FOXJIT_TEST_CACHE_DIR
rm -rf "$FOXJIT_TEST_CACHE_DIR"
if [ "${FOXJIT_SANITIZE_WARM:-1}" != 0 ]; then
    "$B/tools/fox-jit" warm --quiet > "$OUT/warm.txt" 2>&1 ||
        echo "gpu-sanitize: warm failed (see warm.txt); tests will compile"
fi

logs=$(mktemp -d /tmp/foxjit-sanitize.XXXXXX)
jobs=${FOXJIT_SANITIZE_JOBS:-$((4 * gpus))}
limit=${FOXJIT_SANITIZE_TIMEOUT:-540}
"$cs" --version > "$logs/compute-sanitizer-version.txt" 2>&1
nvidia-smi > "$logs/nvidia-smi.txt" 2>&1

flags_for() {
    case $1 in
        memcheck) echo "--tool memcheck --leak-check full" ;;
        racecheck) echo "--tool racecheck" ;;
        initcheck) echo "--tool initcheck" ;;
        synccheck) echo "--tool synccheck" ;;
    esac  # the checker names were checked at the start
}

# 1 when this checker runs the tests in quick mode (FOXJIT_SANITIZE_QUICK).
quick_for() {
    case ${FOXJIT_SANITIZE_QUICK:-1} in
        1) [ "$1" = racecheck ] ;;
        0|none) false ;;
        all) true ;;
        *) case " ${FOXJIT_SANITIZE_QUICK//,/ } " in *" $1 "*) true ;; *) false ;; esac ;;
    esac && echo 1 || echo 0
}

# Prefixes each line with the seconds since the run began.
stamp() {
    local line
    SECONDS=0
    while IFS= read -r line || [ -n "$line" ]; do printf '[%4d s] %s\n' "$SECONDS" "$line"; done
}

# The quick level of one checker on one test program: 0, 1, or 2 for
# racecheck of the trainer programs when it runs quick. Level 2 cuts each
# fox-train run to 1-3 steps (the same kernels, batch and K; the gate then
# asks only for a falling loss): racecheck takes about 30 s a training step
# at B = 32, K = 64 (the heads alone are 10240 blocks a call), and the
# quick runs' 40-step gate alone would take 20 minutes. compute-sanitizer's
# --launch-count, which would check only the first launches, is no way out:
# racecheck then stops with "Internal Sanitizer Error: The Sanitizer failed
# to handle a hardware exception" when the unchecked launches begin
# (compute-sanitizer 2025.3.1, H200).
quick_level() { # tool test-name
    local q
    q=$(quick_for "$1")
    case $q:$1:$2 in
        1:racecheck:gpu_trainer|1:racecheck:gpu_trainer_multi_gpu) q=2 ;;
    esac
    echo "$q"
}

# One checker over one test command (only test function fn when given), on
# GPU dev (a CUDA_VISIBLE_DEVICES value) or on every GPU (dev "all");
# prints its summary line.
run_one() {
    local tool=$1 cmd=$2 dev=$3 fn=$4 name log t0 rc verdict quick mode shown
    name=$(name_of "$cmd")${fn:+:$fn}
    log="$logs/$tool-${name//:/--}.log"
    quick=$(quick_level "$tool" "$(name_of "$cmd")")
    mode=full; [ "$quick" = 1 ] && mode=quick; [ "$quick" = 2 ] && mode=quick2
    t0=$(date +%s.%N)
    (
        [ "$dev" = all ] || export CUDA_VISIBLE_DEVICES="$dev"
        export FOXJIT_TEST_ONLY="$fn"
        eval "FOXJIT_TEST_QUICK=\$quick timeout --kill-after=30 \"\$limit\" \"\$cs\" \
            $(flags_for "$tool") \"\${exclude[@]}\" --target-processes all --print-limit 1000 $cmd"
    ) 2>&1 | stamp > "$log"
    # No --error-exitcode: the status stays the test's own (pass, fail, skip);
    # the reports are counted from the summary.
    rc=${PIPESTATUS[0]}
    IFS='|' read -r shown verdict <<< "$(sanitize_verdict "$tool" "$log" "$rc" "$limit")"
    case $verdict in clean|skipped*) ;; *) verdict="$verdict: $(basename "$log")" ;; esac
    printf '%-10s %-52s rc=%-3d errors=%-5s %7.1f s  dev=%-3s %-6s %s\n' "$tool" "$name" \
        "$rc" "$shown" "$(awk "BEGIN{print $(date +%s.%N) - $t0}")" "$dev" "$mode" \
        "$verdict"
}

# The runs, slowest kinds first so the long ones start at once: racecheck,
# then initcheck, memcheck, synccheck; within a checker the trainer and
# per-step perception programs first. Each is
# "rank|tool|command index|function".
weight_tool() {
    case $1 in racecheck) echo 1 ;; initcheck) echo 2 ;; memcheck) echo 3 ;; *) echo 4 ;; esac
}
weight_test() {
    case $1 in gpu_trainer*|gpu_cfc|gpu_heads|gpu_vsn|gpu_attn_pool) echo 1 ;;
        gpu_kloop|gpu_radix_sort|gpu_rank) echo 2 ;;
        *) echo 3 ;; esac
}
runs=()
for tool in "${tools[@]}"; do
    for i in "${!cmds[@]}"; do
        w="$(weight_tool "$tool")$(weight_test "$(name_of "${cmds[i]}")")"
        if [ -n "${fns[i]}" ]; then
            while IFS= read -r f; do runs+=("$w|$tool|$i|$f"); done <<< "${fns[i]}"
        else
            runs+=("$w|$tool|$i|")
        fi
    done
done
mapfile -t runs < <(printf '%s\n' "${runs[@]}" | sort -s -t'|' -k1,1)

summary="$OUT/sanitize-summary.txt"
: > "$summary"
running=0
pinned=0
multi=0
for r in "${runs[@]}"; do
    IFS='|' read -r _ tool i fn <<< "$r"
    c=${cmds[i]}
    # Round-robin over the GPUs; the multi-GPU tests see all of them, the
    # list turned by one each time so that they do not all start on GPU 0.
    dev=all
    if [ "$gpus" -gt 1 ]; then
        case $(name_of "$c") in
            gpu_multi_context|gpu_trainer_multi_gpu)
                dev=$(for ((k = 0; k < gpus; k++)); do
                          printf '%s\n' "${devs[(multi + k) % gpus]}"; done | paste -sd,)
                multi=$((multi + 1)) ;;
            *) dev=${devs[pinned % gpus]}
               pinned=$((pinned + 1)) ;;
        esac
    fi
    run_one "$tool" "$c" "$dev" "$fn" >> "$summary" &
    running=$((running + 1))
    if [ $running -ge "$jobs" ]; then
        wait -n
        running=$((running - 1))
    fi
done
wait
sort -o "$summary" "$summary"
clean=$(grep -c ' clean$' "$summary")
skipped=$(grep -c ' skipped (' "$summary")
total=$(wc -l < "$summary")
if [ "$total" -ne ${#runs[@]} ]; then
    echo "gpu-sanitize: $((${#runs[@]} - total)) of ${#runs[@]} runs wrote no line" >> "$summary"
fi
if grep -q 'errors=[0-9]*+[0-9]*nccl' "$summary"; then
    echo "gpu-sanitize: errors=N+Mnccl: M CUDA API errors that libnccl.so raised and handled" \
         "itself, not counted (docs/reliability.md)" >> "$summary"
fi
if grep -q 'errors=[0-9+a-z]*[0-9]probe' "$summary"; then
    echo "gpu-sanitize: errors=N+Pprobe: P answers past a kernel's last parameter to the" \
         "library's kernel-argument probe (cuFuncGetParamInfo), not counted (docs/reliability.md)" >> "$summary"
fi
echo "gpu-sanitize: $clean of $total checker runs clean, $skipped skipped, $((total - clean - skipped)) not clean ($("$cs" --version 2>/dev/null | tail -1))" >> "$summary"
tar -czf "$OUT/sanitize-logs.tar.gz" -C "$logs" .
rm -rf "$logs"
cat "$summary"
[ $((clean + skipped)) -eq "$total" ] && [ "$total" -eq ${#runs[@]} ]
