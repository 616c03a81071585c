#!/bin/bash
# unit (no GPU): tools/gpu-multi.sh end to end against a fake build (a fake
# fox-train that writes loss curves, logs and bench JSON in fox-train's
# formats, fake test programs) and a fake nvidia-smi, so that its checks, its
# arguments to fox-train and its summary are tested before a multi-GPU host
# runs it for real:
#   - bad FOXJIT_MULTI_GPUS / FOXJIT_MULTI_BATCH: exit 2 and a message;
#   - fewer GPUs than ranks: exit 1 at once, saying how to rehearse;
#   - 2 GPUs, curves as they should be: exit 0, every check PASS, --gpus 2
#     and --dist-local 2 given, the bench table's figures from the JSON;
#   - 2 processes whose curve differs from --gpus 2's at one step: exit 1,
#     naming the step;
#   - the one-GPU rehearsal (FOXJIT_MULTI_GPUS=1): --gpus 1 --nccl and
#     --dist-local 1 given, exit 0.
#   test_gpu_multi_script.sh SCRIPT
set -u
script=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# The fake build.
b=$tmp/build
mkdir -p "$b/tools/fox-train" "$b/runtime" "$b/tests" "$tmp/bin"
: > "$b/runtime/libfoxjit.so"
for t in gpu_multi_context gpu_trainer_multi_gpu; do
    printf '#!/bin/bash\necho "%s $*" >> "$FAKE_LOG"\nexit 0\n' "$t" > "$b/tests/$t"
    chmod +x "$b/tests/$t"
done
cat > "$b/tools/fox-train/fox-train" <<'FT'
#!/bin/bash
# fox-train's output formats, made-up figures. FAKE_DIFF_AT=S: the
# --dist-local run's loss bits differ at step S.
echo "fox-train $*" >> "$FAKE_LOG"
csv= json= gpus=1 nccl=0 dist=0 bench=0 steps=1000 batch=32 bb=
while [ $# -gt 0 ]; do
    case $1 in
        --csv) csv=$2; shift ;;
        --json) json=$2; shift ;;
        --gpus) gpus=$2; shift ;;
        --nccl) nccl=1 ;;
        --dist-local) dist=$2; shift ;;
        --bench) bench=1 ;;
        --steps) steps=$2; shift ;;
        --batch) batch=$2; shift ;;
        --bench-batches) bb=$2; shift ;;
    esac
    shift
done
if [ $bench = 1 ] && [ $gpus = 1 ] && [ $nccl = 0 ]; then   # bench.c's rows
    {
        printf '{"device": "Fake GPU", "arch": "sm_90", "rows": ['
        sep=
        for B in ${bb//,/ }; do
            awk -v B="$B" -v sep="$sep" 'BEGIN {
                printf "%s\n  {\"group\": \"train_step\", \"path\": \"sequence\", \"batch\": %d, \"k\": 64, \"launches\": 18, \"graph_nodes\": 23, \"eager_ms\": %.4f, \"graph_ms\": %.4f, \"loop_ms\": %.4f, \"loop_sequences\": 4096, \"loop_progress\": 10}", sep, B, 2.1 * B / 64, 2.0 * B / 64, 2.0 * B / 64
            }'
            sep=,
        done
        printf '\n]}\n'
    } > "$json"
    echo "fox-train bench: fake (one GPU)"
    exit 0
fi
if [ $bench = 1 ]; then   # dp_bench.c's rows
    {
        printf '{"device": "Fake GPU", "arch": "sm_90", "gpus": %d, "nccl_version": 22803, "rows": [' "$gpus"
        sep=
        for B in ${bb//,/ }; do
            # 1 GPU: 500 steps/s at B = 64, halving as B doubles; N GPUs: 0.99 N x.
            awk -v B="$B" -v n="$gpus" -v nccl="$nccl" -v sep="$sep" 'BEGIN {
                s1 = 500 * 64 / B
                row = "\n  {\"group\": \"train_step_data_parallel\", \"gpus\": %d, \"global_batch\": %d, \"batch_per_gpu\": %d, \"k\": 64, \"nccl\": %s, \"graph_nodes\": 23, \"graph_ms\": %.4f, \"steps_per_s\": %.2f, \"samples_per_s\": %.1f, \"scaling\": %.4f, \"loop_ms\": %.4f, \"loop_sequences\": 4096, \"loop_progress\": 10, \"kind\": \"%s\"}"
                printf sep row, 1, B, B, "false", 1e3 / s1, s1, s1 * B, 1, 1e3 / s1, "baseline: 1 GPU, no NCCL"
                if (n == 1 && nccl)
                    printf "," row, 1, B, B, "true", 1e3 / s1, s1, s1 * B, 1, 1e3 / s1, "1 GPU through NCCL (one rank)"
                if (n > 1) {
                    s = s1 * 0.99 * n
                    printf "," row, n, B, B / n, "true", 1e3 / s, s, s * B, s / s1, 1e3 / s, "same global batch"
                    printf "," row, n, n * B, B, "true", 1e3 / s1, s1, s1 * n * B, n, 1e3 / s1, "same batch per GPU"
                }
            }'
            sep=,
        done
        printf '\n]}\n'
    } > "$json"
    echo "fox-train bench: fake"
    exit 0
fi
[ $gpus -gt 1 ] || [ $nccl = 1 ] && echo "fox-train: data parallel over $gpus GPU(s) (fake NCCL 2.28.3)" >&2
[ $dist -gt 0 ] && echo "fox-train: data parallel over $dist process(es), one GPU each (fake)" >&2
diff_at=0
[ $dist -gt 0 ] && diff_at=${FAKE_DIFF_AT:-0}
awk -v n="$steps" -v d="$diff_at" 'BEGIN {
    print "step,loss,loss_bits"
    for (i = 1; i <= n; i++)
        printf "%d,%.9g,0x%08x\n", i, 1.386 - i * 1e-4, 1068000000 + i + (i == d)
}' > "$csv"
echo "trained steps 1..$steps (graph-replayed) at B = $batch, K = 64 in 1.00 s: 0.500 ms/step; loss 1.38590 at step 1, 1.18600 at step $steps"
echo "held-out after training (1024 sequences): loss 0.66800 (bars 0.40000 + sequence 0.26800), AUC bars 0.9890, AUC sequence 0.9220"
[ $gpus -gt 1 ] || [ $dist -gt 0 ] && echo "replicas: the parameters of all ranks are bitwise identical at step $steps"
exit 0
FT
chmod +x "$b/tools/fox-train/fox-train"
cat > "$tmp/bin/nvidia-smi" <<'NS'
#!/bin/bash
case "$*" in
    -L) for ((i = 0; i < FAKE_GPUS; i++)); do echo "GPU $i: Fake GPU (UUID: GPU-$i)"; done ;;
    "topo -m") printf '\tGPU0\tGPU1\nGPU0\t X \tNV18\nGPU1\tNV18\t X \n' ;;
    *) echo "index, name" ;;
esac
NS
chmod +x "$tmp/bin/nvidia-smi"

# run_script NAME ENV...: the script on the fake build; its exit status in
# $rc, its output in $tmp/NAME.out, fake programs' argv in $tmp/NAME.calls.
run_script() {
    local name=$1
    shift
    : > "$tmp/$name.calls"
    env PATH="$tmp/bin:$PATH" FAKE_LOG="$tmp/$name.calls" FOXJIT_NCCL_LIBRARY=/fake/libnccl.so.2 \
        FOXJIT_MULTI_STEPS=60 FOXJIT_MULTI_BUDGET=450 "$@" \
        "$script" "$b" "$tmp/$name" > "$tmp/$name.out" 2>&1
    rc=$?
}
expect() { # NAME WANT_RC NEEDLE...: exit status and lines of the output
    local name=$1 want=$2 n
    shift 2
    [ "$rc" -eq "$want" ] || fail "$name: exit $rc, want $want; output: $(cat "$tmp/$name.out")"
    for n in "$@"; do
        grep -qF -- "$n" "$tmp/$name.out" || fail "$name: no '$n' in the output: $(cat "$tmp/$name.out")"
    done
}
called() { # NAME NEEDLE: a fake program was called with these arguments
    grep -qF -- "$2" "$tmp/$1.calls" || fail "$1: no call with '$2'; calls: $(cat "$tmp/$1.calls")"
}

run_script bad-n FAKE_GPUS=2 FOXJIT_MULTI_GPUS=two
expect bad-n 2 "FOXJIT_MULTI_GPUS must be a whole number of GPUs"
run_script bad-batch FAKE_GPUS=2 FOXJIT_MULTI_BATCH=63
expect bad-batch 2 "FOXJIT_MULTI_BATCH=63 does not split into 2 equal shares"
[ -s "$tmp/bad-batch.calls" ] && fail "bad-batch: ran something: $(cat "$tmp/bad-batch.calls")"

run_script one-gpu FAKE_GPUS=1
expect one-gpu 1 "the runs need 2 GPUs and this host shows 1" "FOXJIT_MULTI_GPUS=1 to rehearse"
[ -s "$tmp/one-gpu.calls" ] && fail "one-gpu: ran something: $(cat "$tmp/one-gpu.calls")"

run_script two FAKE_GPUS=2
expect two 0 "GPU0-GPU1 link (nvidia-smi topo -m): NV18" \
    "test gpu_multi_context" "train 2 GPUs (B=64 = 2 x 32)" \
    "60/60 steps bitwise equal" \
    "2 GPUs at 2B" "result: 0 check(s) failed -> exit 0"
grep -E "^loss curves 1 GPU vs --gpus 2 +PASS" "$tmp/two.out" > /dev/null || fail "two: 1 vs 2 GPUs not PASS"
grep -E "^loss curves 2 proc vs --gpus 2 +PASS +60/60 steps bitwise equal$" "$tmp/two.out" > /dev/null ||
    fail "two: 2 processes vs --gpus 2 not PASS"
# B = 64: 500 steps/s on one GPU, 990 on two (1.98x), 500 at 2B (2.00x).
grep -E "^ +64 +500.0 +990.0 +1.98x +500.0 +2.00x +500.0$" "$tmp/two.out" > /dev/null ||
    fail "two: the bench row of B = 64 is not the JSON's: $(grep -E '^ +64 ' "$tmp/two.out")"
called two "fox-train --library $b/runtime/libfoxjit.so"
called two "--gpus 2 --csv $tmp/two/loss-2gpu.csv"
called two "--dist-local 2 --csv $tmp/two/loss-2proc.csv"
called two "--bench --bench-batches 64,256,512 --gpus 2 --json $tmp/two/bench-2gpu.json"
called two "gpu_trainer_multi_gpu $b/tools/fox-train/fox-train $b/runtime/libfoxjit.so"
for f in multi-summary.txt multi.log loss-1gpu.csv loss-2gpu.csv loss-2proc.csv bench-1gpu.json \
         bench-2gpu.json multi-logs.tar.gz; do
    [ -s "$tmp/two/$f" ] || fail "two: no $f"
done

run_script differ FAKE_GPUS=2 FAKE_DIFF_AT=7
expect differ 1 "59/60 steps bitwise equal; first difference at step 7" \
    "result: 1 check(s) failed -> exit 1"

run_script rehearsal FAKE_GPUS=1 FOXJIT_MULTI_GPUS=1
expect rehearsal 0 "train 1 process (--dist-local 1)" "60/60 steps bitwise equal" \
    "result: 0 check(s) failed -> exit 0"
grep -E "^loss curves 1 proc vs --gpus 1 --nccl +PASS" "$tmp/rehearsal.out" > /dev/null ||
    fail "rehearsal: 1 process vs --gpus 1 --nccl not PASS"
grep -q "link (nvidia-smi topo -m)" "$tmp/rehearsal.out" && fail "rehearsal: a GPU0-GPU1 link on a host of one GPU"
called rehearsal "--gpus 1 --nccl --csv $tmp/rehearsal/loss-1gpu-nccl.csv"
called rehearsal "--dist-local 1 --csv $tmp/rehearsal/loss-1proc.csv"
called rehearsal "--gpus 1 --nccl --json $tmp/rehearsal/bench-1gpu-nccl.json"
called rehearsal "--gpus 1 --json $tmp/rehearsal/bench-1gpu.json"
# The one-rank row through NCCL against the baseline (1.00x).
grep -E "^ +64 +500.0 +500.0 +1.00x +- +- +500.0$" "$tmp/rehearsal.out" > /dev/null ||
    fail "rehearsal: the bench row of B = 64: $(grep -E '^ +64 ' "$tmp/rehearsal.out")"
exit $failed
