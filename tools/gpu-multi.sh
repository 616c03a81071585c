#!/bin/bash
# The multi-GPU checks of a build on a host with 2 GPUs, in one command of a
# few minutes. Used on a GPU machine with a build made elsewhere, like
# tools/gpu-check.sh:
#   tools/gpu-multi.sh BUILD_DIR OUT_DIR
# It runs, each with a timeout and whatever failed before:
#   1. nvidia-smi -L and topo -m (how the GPUs are linked); finds libnccl.so.2
#      (the loader's path, else a Python wheel's nvidia/nccl/lib, exported as
#      FOXJIT_NCCL_LIBRARY);
#   2. the gpu tests gpu_multi_context and gpu_trainer_multi_gpu, with the
#      arguments and environment of BUILD_DIR/meson-info/intro-tests.json
#      (build paths mapped onto BUILD_DIR), FOXJIT_REQUIRE_GPU=1;
#   3. fox-train at --gpus 1 and --gpus N (N = FOXJIT_MULTI_GPUS, 2 unless
#      told) on the same global batch (--batch 64: one GPU x 64 rows, or each
#      of two GPUs x 32 rows of every batch),
#      2000 graph-replayed steps each, then compares the loss curves (the
#      test's tolerance on the first 50 steps, figures over all of them) and
#      the held-out AUC; then the same run as N processes (--dist-local N:
#      one rank each, NCCL's bootstrap at NCCL_COMM_ID), whose loss curve
#      must be bitwise that of --gpus N in one process (issue 18);
#   4. fox-train --bench at --gpus 1 and --gpus N (--json): steps/s on 1 and
#      N GPUs and the scaling.
# Writes OUT_DIR/multi-summary.txt (printed last), multi.log (every command's
# output), loss-1gpu.csv, loss-Ngpu.csv, loss-Nproc.csv, bench-1gpu.json,
# bench-Ngpu.json and multi-logs.tar.gz (per-step logs, a failed test's kept
# files): 8 files (N = 2: loss-2gpu.csv, loss-2proc.csv, bench-2gpu.json).
# A rehearsal on one GPU: FOXJIT_MULTI_GPUS=1 runs the same steps with one
# rank through NCCL (--gpus 1 --nccl, --dist-local 1; loss-1gpu-nccl.csv,
# loss-1proc.csv, bench-1gpu-nccl.json), so the script, the NCCL and --dist
# paths and the summary are checked before a multi-GPU host is at hand; its
# curves must all be bitwise equal.
# Environment: NCCL_NVLS_ENABLE=0 is forced (NVLink multicast stays off);
#   FOXJIT_MULTI_BUDGET   seconds for everything (default 450): each step's
#                         timeout is cut so that the later ones keep 30 s each
#   FOXJIT_MULTI_STEPS    training steps per run (default 2000)
#   FOXJIT_MULTI_GPUS     N, the GPUs (and processes) of the data-parallel
#                         runs (default 2; 1 rehearses on one GPU)
#   FOXJIT_MULTI_BATCH    global batch of the training runs (default 64; a
#                         multiple of N)
#   FOXJIT_MULTI_BENCH_BATCHES  --bench-batches (default 64,256,512)
#   FOXJIT_NCCL_LIBRARY   libnccl.so.2 to use (default: found as above)
# Exit status: 0 when no test, run or check failed (a test that skips with
# 77 is not a failure), 1 otherwise, 2 bad usage.
set -u
if [ $# -ne 2 ] || [ ! -d "$1" ]; then
    echo "usage: $0 BUILD_DIR OUT_DIR" >&2
    exit 2
fi
B=$(cd "$1" && pwd)
mkdir -p "$2" || exit 2
OUT=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")/.." && pwd)

# FOXJIT_TEST_LIB_DIR: a directory of shared libraries the test programs
# need and the machine lacks (libcmocka.so.0 on a GPU host without the
# package), searched first.
if [ -n "${FOXJIT_TEST_LIB_DIR:-}" ]; then
    export LD_LIBRARY_PATH="$FOXJIT_TEST_LIB_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export FOXJIT_REQUIRE_GPU=1
export NCCL_NVLS_ENABLE=0
export FOXJIT_CACHE_DIR=/tmp/foxjit-multi-cache
rm -rf "$FOXJIT_CACHE_DIR"

budget=${FOXJIT_MULTI_BUDGET:-450}
steps=${FOXJIT_MULTI_STEPS:-2000}
batch=${FOXJIT_MULTI_BATCH:-64}
bench_batches=${FOXJIT_MULTI_BENCH_BATCHES:-64,256,512}
world=${FOXJIT_MULTI_GPUS:-2}
case $world in
    '' | *[!0-9]* | 0*) echo "$0: FOXJIT_MULTI_GPUS must be a whole number of GPUs, 1 or more (got '$world')" >&2; exit 2 ;;
esac
case $batch in
    '' | *[!0-9]* | 0*) echo "$0: FOXJIT_MULTI_BATCH must be a whole number, 1 or more (got '$batch')" >&2; exit 2 ;;
esac
if [ $((batch % world)) -ne 0 ]; then
    echo "$0: FOXJIT_MULTI_BATCH=$batch does not split into $world equal shares (FOXJIT_MULTI_GPUS); give a multiple of $world" >&2
    exit 2
fi
# The data-parallel runs: N GPUs, or a world of one through NCCL.
dp=(--gpus "$world")
dpname=${world}gpu   # their files: loss-$dpname.csv, bench-$dpname.json
[ "$world" -eq 1 ] && dp+=(--nccl) && dpname=1gpu-nccl
t_start=$(date +%s)
deadline=$((t_start + budget))
work=$(mktemp -d /tmp/foxjit-multi.XXXXXX)
LOG=$OUT/multi.log
RES=$work/results.tsv
: > "$LOG"
: > "$RES"
ft=$B/tools/fox-train/fox-train
lib=$B/runtime/libfoxjit.so
if [ ! -e "$lib" ]; then
    for f in "$B"/runtime/libfoxjit.so.*; do [ -f "$f" ] && lib=$f && break; done
fi

note() { echo "gpu-multi: $*" | tee -a "$LOG"; }

# step NAME KIND CAP CMD...: runs CMD with a timeout of at most CAP seconds,
# less when the budget must keep 30 s for each of the $later steps after it;
# its output to $work/NAME.log and multi.log; a line to results.tsv.
later=0
step() {
    local name=$1 kind=$2 cap=$3 log=$work/$1.log t0 t rc status dt
    shift 3
    later=$((later - 1))
    t0=$(date +%s)
    t=$((deadline - t0 - 30 * later))
    [ "$t" -gt "$cap" ] && t=$cap
    if [ "$t" -lt 15 ]; then
        note "$name: NOT RUN (the ${budget} s budget is spent)"
        printf '%s\t%s\tNOT RUN\t-\t0\tbudget spent\n' "$name" "$kind" >> "$RES"
        return 0
    fi
    echo "=== $name (timeout $t s): $*" > "$log"
    timeout --kill-after=10 "$t" "$@" >> "$log" 2>&1 < /dev/null
    rc=$?
    dt=$(($(date +%s) - t0))
    case $rc in
        0) status=PASS ;;
        77) status=SKIP ;;
        124 | 137) status=TIMEOUT ;;
        *) status=FAIL ;;
    esac
    echo "=== $name: $status (rc=$rc, $dt s)" >> "$log"
    cat "$log" >> "$LOG"
    printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$kind" "$status" "$rc" "$dt" "timeout $t s" >> "$RES"
    note "$name: $status (rc=$rc, $dt s)"
    return 0
}

# --- 1. the machine ------------------------------------------------------------
{
    echo "=== nvidia-smi -L"
    timeout 20 nvidia-smi -L 2>&1
    echo "=== nvidia-smi topo -m"
    timeout 20 nvidia-smi topo -m 2>&1
    echo "=== nvidia-smi"
    timeout 20 nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,temperature.gpu --format=csv 2>&1
} > "$work/nvidia-smi.txt"
cat "$work/nvidia-smi.txt" >> "$LOG"
gpus=$(grep -c '^GPU [0-9]' "$work/nvidia-smi.txt")
note "$gpus GPU(s); N = $world (FOXJIT_MULTI_GPUS); NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE; budget $budget s"
# Fewer GPUs than ranks: every data-parallel run would fail the same way.
if [ "$gpus" -ge 1 ] && [ "$gpus" -lt "$world" ]; then
    msg="gpu-multi: the runs need $world GPUs and this host shows $gpus (nvidia-smi -L); use a host with $world, or FOXJIT_MULTI_GPUS=1 to rehearse on one"
    echo "$msg" | tee -a "$LOG" > "$OUT/multi-summary.txt"
    rm -rf "$work"
    echo
    cat "$OUT/multi-summary.txt"
    exit 1
fi

nccl_from="loader path"
if [ -z "${FOXJIT_NCCL_LIBRARY:-}" ] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; then
    found=
    IFS=: read -ra dirs <<< "${LD_LIBRARY_PATH:-}"
    for d in "${dirs[@]}" /usr/local/cuda/lib64 /usr/lib/x86_64-linux-gnu; do
        if [ -n "$d" ] && [ -e "$d/libnccl.so.2" ]; then found=$d/libnccl.so.2; break; fi
    done
    if [ -z "$found" ] && command -v python3 > /dev/null 2>&1; then
        found=$(timeout 30 python3 - 2>/dev/null <<'PY'
import glob, os, site, sys
roots = list(sys.path)
try:
    roots += site.getsitepackages() + [site.getusersitepackages()]
except Exception:
    pass
for r in roots:
    for p in sorted(glob.glob(os.path.join(r or ".", "nvidia", "nccl*", "lib", "libnccl.so.2"))):
        print(os.path.realpath(p))
        sys.exit(0)
PY
)
    fi
    if [ -n "$found" ]; then
        export FOXJIT_NCCL_LIBRARY=$found
        nccl_from="FOXJIT_NCCL_LIBRARY=$found (found)"
    else
        nccl_from="NOT FOUND (no libnccl.so.2 on the loader's path or in a Python wheel)"
    fi
elif [ -n "${FOXJIT_NCCL_LIBRARY:-}" ]; then
    nccl_from="FOXJIT_NCCL_LIBRARY=$FOXJIT_NCCL_LIBRARY (given)"
fi
note "NCCL: $nccl_from"

# --- 2. the gpu tests --------------------------------------------------------------
tests=(gpu_multi_context gpu_trainer_multi_gpu)
declare -A cmd_of=()
if [ -f "$B/meson-info/intro-tests.json" ] && command -v python3 > /dev/null 2>&1; then
    while IFS=$'\t' read -r name line; do cmd_of[$name]=$line; done < <(
        python3 - "$B" "${tests[@]}" <<'PY'
import json, os, shlex, sys
b, want = sys.argv[1], sys.argv[2:]
info = json.load(open(os.path.join(b, "meson-info", "meson-info.json")))
old = info["directories"]["build"]
fix = lambda a: a.replace(old, b) if old in a else a
for t in json.load(open(os.path.join(b, "meson-info", "intro-tests.json"))):
    if t["name"] not in want:
        continue
    env = []
    for k, v in sorted((t.get("env") or {}).items()):
        v = fix(v)
        if k == "LD_LIBRARY_PATH" and os.environ.get(k):
            v += ":" + os.environ[k]
        env.append("%s=%s" % (k, v))
    argv = ["env"] + env + [fix(a) for a in t["cmd"]]
    print(t["name"] + "\t" + " ".join(shlex.quote(a) for a in argv))
PY
    )
fi
for t in "${tests[@]}"; do
    if [ -z "${cmd_of[$t]:-}" ]; then  # no meson-info: the arguments gpu-check.sh gives
        cmd_of[$t]="env FOXJIT_LOG=warn $(printf '%q' "$B/tests/$t")"
        [ "$t" = gpu_trainer_multi_gpu ] && cmd_of[$t]+=" $(printf '%q %q' "$ft" "$lib")"
    fi
done

argv=()
later=7
eval "argv=(${cmd_of[gpu_multi_context]})"
step gpu_multi_context test 120 "${argv[@]}"
eval "argv=(${cmd_of[gpu_trainer_multi_gpu]})"
step gpu_trainer_multi_gpu test 240 "${argv[@]}"
# A failed test keeps its logs and loss curves in a temporary folder: bring it.
for t in "${tests[@]}"; do
    kept=$(sed -n 's/.*kept in \(\/tmp\/[^ ]*\).*/\1/p' "$work/$t.log" 2>/dev/null | tail -1)
    [ -n "$kept" ] && [ -d "$kept" ] && cp -r "$kept" "$work/$t-kept" 2>/dev/null
done

# --- 3. training on 1 and on N GPUs at the same global batch ---------------------------
common=(--library "$lib" --cache-dir "$FOXJIT_CACHE_DIR" --batch "$batch" --steps "$steps"
        --lr 3e-3 --seed 1 --graph)
step train-1gpu run 90 "$ft" "${common[@]}" --gpus 1 --csv "$OUT/loss-1gpu.csv"
step train-dp run 90 "$ft" "${common[@]}" "${dp[@]}" --csv "$OUT/loss-$dpname.csv"
step train-dist run 90 "$ft" "${common[@]}" --dist-local "$world" --csv "$OUT/loss-${world}proc.csv"

# --- 4. steps/s and scaling -----------------------------------------------------------
bench=(--library "$lib" --cache-dir "$FOXJIT_CACHE_DIR" --bench --bench-batches "$bench_batches")
step bench-dp run 120 "$ft" "${bench[@]}" "${dp[@]}" --json "$OUT/bench-$dpname.json"
step bench-1gpu run 90 "$ft" "${bench[@]}" --gpus 1 --json "$OUT/bench-1gpu.json"

# --- summary ---------------------------------------------------------------------------
elapsed=$(($(date +%s) - t_start))
rev=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo "unknown")
summary=$OUT/multi-summary.txt
if command -v python3 > /dev/null 2>&1; then
    GM_REV=$rev GM_ELAPSED=$elapsed GM_BUDGET=$budget GM_NCCL=$nccl_from \
        python3 - "$work" "$OUT" "$steps" "$batch" "$world" "$dpname" > "$summary" 2>> "$LOG" <<'PY'
import csv, json, math, os, re, sys
work, out, steps, batch, W = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
DPN = sys.argv[6]   # the data-parallel runs' files: loss-DPN.csv, bench-DPN.json
GW = "%d GPU%s" % (W, "" if W == 1 else "s")   # "2 GPUs"
DPF = "--gpus %d%s" % (W, " --nccl" if W == 1 else "")
rows = [l.rstrip("\n").split("\t") for l in open(os.path.join(work, "results.tsv")) if l.strip()]
res = {r[0]: r for r in rows}
def text(name):
    try:
        return open(os.path.join(work, name)).read()
    except OSError:
        return ""
def last(pattern, s):
    m = re.findall(pattern, s)
    return m[-1] if m else None
env = os.environ.get
print("fox-jit multi-GPU check (tools/gpu-multi.sh), commit %s, %s s of a %s s budget"
      % (env("GM_REV"), env("GM_ELAPSED"), env("GM_BUDGET")))
gl = [l.strip() for l in text("nvidia-smi.txt").splitlines() if l.startswith("GPU ")]
print("GPUs: %d%s" % (len(gl), "".join("\n  " + re.sub(r" \(UUID.*", "", l) for l in gl)))
link = next((l.split()[2] for l in text("nvidia-smi.txt").splitlines()
             if re.match(r"GPU0\s+X\s+\S", l)), None) if len(gl) >= 2 else None
if link:
    print("  GPU0-GPU1 link (nvidia-smi topo -m): " + link)
print("NCCL: " + env("GM_NCCL", ""))
nccl_line = last(r"fox-train: (data parallel over [^\n]*)", text("train-dp.log"))
if nccl_line:
    print("  fox-train %s: %s" % (DPF, nccl_line))
failed = 0
def verdict_line(label, name, extra=""):
    global failed
    r = res.get(name)
    if not r:
        print("%-38s %-8s" % (label, "NOT RUN")); failed += 1; return
    status, rc, dt = r[2], r[3], r[4]
    if status not in ("PASS", "SKIP"):
        failed += 1
    print("%-38s %-8s rc=%-4s %5s s  %s" % (label, status, rc, dt, extra))

print("\n%-38s %-8s %-7s %7s  %s" % ("check", "result", "", "time", "note"))
for t in ("gpu_multi_context", "gpu_trainer_multi_gpu"):
    log = text(t + ".log")
    why = ""
    if res.get(t, ["", "", ""])[2] == "SKIP":
        why = last(r"NOT RUN: ([^\n]*)", log) or last(r"SKIP: ([^\n]*)", log) or "skipped"
    elif res.get(t, ["", "", ""])[2] == "TIMEOUT":
        why = "killed at its %s" % res[t][5]
    elif res.get(t, ["", "", ""])[2] != "PASS":
        why = next((l for l in log.splitlines() if not l.startswith("===")
                    and re.search(r"FAIL|ERROR|[Tt]imeout|[Tt]erminated", l)), "")
    verdict_line("test " + t, t, why[:110])

def train_info(name):
    s = text(name + ".log")
    d = {}
    m = re.findall(r"in ([0-9.]+) s: ([0-9.]+) ms/step; loss ([0-9.]+) at step \d+, ([0-9.]+) at step (\d+)", s)
    if m:
        d["s"], d["ms"], d["loss0"], d["loss1"], d["end"] = m[-1]
    m = re.findall(r"held-out after training \((\d+) sequences\): loss ([0-9.]+) .*AUC bars ([0-9.]+), AUC sequence ([0-9.]+)", s)
    if m:
        d["n"], d["hloss"], d["auc_bars"], d["auc_seq"] = m[-1]
    d["replicas"] = bool(re.search(r"replicas: .*bitwise identical", s))
    d["why"] = last(r"fox-train: ([^\n]*)", s) if not d.get("ms") else None
    return d
tr = {}
for name, label in (("train-1gpu", "train 1 GPU  (B=%d)" % batch),
                    ("train-dp", "train %s (B=%d = %d x %d)" % (GW if W > 1 else DPF, batch, W, batch // W))):
    d = tr[name] = train_info(name)
    if d.get("ms"):
        extra = "%s ms/step = %.0f steps/s; loss %s -> %s" % (d["ms"], 1e3 / float(d["ms"]), d["loss0"], d["loss1"])
        if name == "train-dp":
            extra += "; replicas " + ("identical" if d["replicas"] else "NOT CHECKED")
    else:
        extra = (d.get("why") or "")[:110]
    verdict_line(label, name, extra)

def curve(path):
    try:
        with open(path) as f:
            return [(int(r["step"]), float(r["loss"]), r["loss_bits"]) for r in csv.DictReader(f)]
    except (OSError, ValueError, KeyError):
        return []
a, b = curve(os.path.join(out, "loss-1gpu.csv")), curve(os.path.join(out, "loss-%s.csv" % DPN))
if not a or not b:
    failed += 1
    print("%-38s %-8s %s" % ("loss curves 1 GPU vs " + DPF, "FAIL" if (res.get("train-1gpu") and res.get("train-dp")) else "NOT RUN",
          "no curve (1 GPU: %d steps, %s: %d steps)" % (len(a), GW, len(b))))
else:
    n = min(len(a), len(b))
    same_steps = len(a) == len(b) == steps and all(a[i][0] == b[i][0] for i in range(n))
    finite = all(math.isfinite(x[1]) for x in a + b)
    rel = [abs(a[i][1] - b[i][1]) / max(abs(a[i][1]), 1e-30) for i in range(n)]
    absd = [abs(a[i][1] - b[i][1]) for i in range(n)]
    bitwise = sum(a[i][2] == b[i][2] for i in range(n))
    first = rel[0]
    head = max(rel[:50])
    imax = max(range(n), key=lambda i: absd[i])
    drift = next((a[i][0] for i in range(n) if rel[i] > 1e-2), None)
    tail = min(100, n)
    ma, mb = sum(x[1] for x in a[-tail:]) / tail, sum(x[1] for x in b[-tail:]) / tail
    ok = same_steps and finite and first <= 1e-5 and head <= 2e-3
    if not ok:
        failed += 1
    print("%-38s %-8s %s" % ("loss curves 1 GPU vs " + DPF, "PASS" if ok else "FAIL",
          "%d/%d steps; step 1 rel %.2g (tol 1e-5), steps 1-50 max rel %.2g (tol 2e-3, as the test)"
          % (n, steps, first, head, )))
    print("%-38s %-8s max |loss diff| %.3g at step %d over all %d steps; %d bitwise equal;" % ("", "", absd[imax], a[imax][0], n, bitwise))
    print("%-38s %-8s first step over 1%% apart: %s; mean of the last %d: %.5f vs %.5f"
          % ("", "", drift if drift else "none", tail, ma, mb))
d = tr["train-dist"] = train_info("train-dist")
verdict_line("train %d process%s (--dist-local %d)" % (W, "" if W == 1 else "es", W), "train-dist",
             ("%s ms/step; replicas %s" % (d["ms"], "identical" if d["replicas"] else "NOT CHECKED"))
             if d.get("ms") else (d.get("why") or "")[:110])
c = curve(os.path.join(out, "loss-%dproc.csv" % W))
if not b or not c:
    failed += 1
    print("%-38s %-8s %s" % ("loss curves %d proc vs %s" % (W, DPF), "FAIL" if (res.get("train-dp") and res.get("train-dist")) else "NOT RUN",
          "no curve (%s: %d steps, %d process%s: %d steps)" % (DPF, len(b), W, "" if W == 1 else "es", len(c))))
else:
    same = len(b) == len(c) == steps and all(b[i][0] == c[i][0] and b[i][2] == c[i][2] for i in range(len(b)))
    if not same:
        failed += 1
    first_diff = next((b[i][0] for i in range(min(len(b), len(c))) if b[i][2] != c[i][2]), None)
    print("%-38s %-8s %s" % ("loss curves %d proc vs %s" % (W, DPF), "PASS" if same else "FAIL",
          "%d/%d steps bitwise equal%s" % (sum(b[i][2] == c[i][2] for i in range(min(len(b), len(c)))), steps,
                                          "" if same else "; first difference at step %s" % first_diff)))
for name, label in (("bench-dp", "bench " + DPF), ("bench-1gpu", "bench --gpus 1")):
    verdict_line(label, name, (last(r"fox-train: ([^\n]*)", text(name + ".log")) or "")[:110]
                 if res.get(name, ["", "", ""])[2] != "PASS" else "")

print("\nheld-out after %d steps (1024 sequences)  loss     AUC bars  AUC sequence" % steps)
for name, label in (("train-1gpu", "1 GPU"), ("train-dp", DPF)):
    d = tr[name]
    if d.get("auc_bars"):
        print("  %-40s %-8s %-9s %s" % (label, d["hloss"], d["auc_bars"], d["auc_seq"]))
    else:
        print("  %-40s (not reported)" % label)
if tr["train-1gpu"].get("ms") and tr["train-dp"].get("ms"):
    s1, s2 = 1e3 / float(tr["train-1gpu"]["ms"]), 1e3 / float(tr["train-dp"]["ms"])
    print("training loop at B=%d: %.0f steps/s on 1 GPU, %.0f with %s: %.2fx" % (batch, s1, s2, DPF, s2 / s1))

def load(path):
    try:
        return json.load(open(path))["rows"]
    except (OSError, ValueError, KeyError):
        return []
dp, one = load(os.path.join(out, "bench-%s.json" % DPN)), load(os.path.join(out, "bench-1gpu.json"))
print("\nsteps/s, graph-replayed (fox-train --bench %s: median of 5 x 50 steps, a sample = the slowest GPU)" % DPF)
# A row of the data-parallel runs (through NCCL) at global batch B
def dp_row(B, kind=None):
    return next((x for x in dp if x["gpus"] == W and x.get("nccl") and x["global_batch"] == B
                 and (kind is None or x["kind"] == kind)), None)
if dp:
    print("%9s %12s %12s %9s %16s %9s %14s" % ("global B", "1 GPU", GW, "scaling", "%s at %dB" % (GW, W), "scaling", "1 GPU (--gpus 1)"))
    for r in [r for r in dp if r["gpus"] == 1 and not r.get("nccl")]:
        B = r["global_batch"]
        same = dp_row(B)
        dbl = dp_row(W * B, "same batch per GPU") if W > 1 else None
        o = next((x for x in one if x.get("batch") == B), None)
        print("%9d %12.1f %12s %8s %16s %8s %14s" % (
            B, r["steps_per_s"],
            "%.1f" % same["steps_per_s"] if same else "-", "%.2fx" % same["scaling"] if same else "-",
            "%.1f" % dbl["steps_per_s"] if dbl else "-", "%.2fx" % dbl["scaling"] if dbl else "-",
            "%.1f" % (1e3 / o["graph_ms"]) if o else "-"))
    print("scaling: samples/s over 1 GPU's at B (ideal %.2fx); '%s' = the same global batch split %d ways," % (W, GW, W))
    print("'%s at %dB' = each GPU as busy as the 1-GPU baseline" % (GW, W))
    loops = [r for r in dp if r["gpus"] == 1 and not r.get("nccl") and r.get("loop_ms")]
    if loops:
        print("\nsteps/s as a run takes them (loop ms: through epochs packed ahead, a reporting point every %d steps)" % loops[0].get("loop_progress", 0))
        print("%9s %12s %12s %9s" % ("global B", "1 GPU", GW, "scaling"))
        for r in loops:
            same = dp_row(r["global_batch"])
            same = same if same and same.get("loop_ms") else None
            s1 = 1e3 / r["loop_ms"]
            print("%9d %12.1f %12s %9s" % (r["global_batch"], s1, "%.1f" % (1e3 / same["loop_ms"]) if same else "-",
                                          "%.2fx" % (1e3 / same["loop_ms"] / s1) if same else "-"))
else:
    print("  (no bench-%s.json)" % DPN)
    if one:
        for o in one:
            print("  1 GPU, B=%d: %.1f steps/s graph-replayed, %.1f eager" % (o["batch"], 1e3 / o["graph_ms"], 1e3 / o["eager_ms"]))
print("\nresult: %d check(s) failed -> exit %d   (logs: multi.log, multi-logs.tar.gz)" % (failed, 1 if failed else 0))
sys.exit(1 if failed else 0)
PY
    rc=$?
else
    {
        echo "fox-jit multi-GPU check, commit $rev, $elapsed s (python3 not found: figures not parsed)"
        echo "NCCL: $nccl_from"
        awk -F'\t' '{printf "%-26s %-8s rc=%-4s %5s s\n", $1, $3, $4, $5}' "$RES"
    } > "$summary"
    rc=0
    grep -qv $'\t\(PASS\|SKIP\)\t' "$RES" && rc=1
fi
# A summary that lost a result (python failed) must still fail the run.
if [ $rc -eq 0 ] && cut -f3 "$RES" | grep -qv '^\(PASS\|SKIP\)$'; then rc=1; fi
[ -s "$summary" ] || { echo "gpu-multi: the summary could not be written (see multi.log)" > "$summary"; rc=1; }
tar -czf "$OUT/multi-logs.tar.gz" -C "$work" . 2>> "$LOG"
rm -rf "$work"
echo
cat "$summary"
exit $rc
