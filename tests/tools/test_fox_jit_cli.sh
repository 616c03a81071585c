#!/bin/bash
# scripts (no GPU needed): what the fox-jit command says and returns for the
# settings a user gets wrong (and verify --remove's account of a file it
# keeps). FOXJIT_TARGET steers `warm` without --arch
# (GPU or not) and a value that is not a target is refused (warm: 2, info:
# 1, everything else still printed); --arch twice is refused rather than
# the last one kept; an empty manifest is refused; `info` on a cache path
# that is a file exits 1; bench's --samples wants a number and its
# --precision float32 or tf32. With a fake
# driver reporting one GPU (FAKE_CUDA, FAKE_CUDA_CC): warm builds for that
# GPU, and refuses (1) one NVRTC cannot target instead of building other
# archs; info refuses (1) a FOXJIT_TARGET newer than the GPU. A sibling
# command's option is named as such; a column_sum shape past 2^40 elements
# is refused by the manifest (2), naming the manifest file, and a number
# past int64 is "too large". --print-manifest beside a build option, an
# empty --max-bytes, a manifest with no end (/dev/zero, `yes |`) are bad
# usage said plainly; `help version` describes version. warm --precision
# builds the precision-following kernels at each precision asked for and
# refuses a list that is not float32, tf32 or both. Files named like
# entries that are not fox-jit's (a foreign file, a symbolic link) get one
# rule from verify, verify --remove, clear and prune, are never counted as
# entries, and are warned about once per warm.
#   test_fox_jit_cli.sh build/tools/fox-jit build/tests/libfake_cuda.so
set -u
foxjit=$1 fake_cuda=${2:+$(realpath "$2")}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }
# expect STATUS PATTERN CMD...: the exit status, and the pattern in the output.
expect() {
    local want=$1 pat=$2; shift 2
    "$@" > "$tmp/out" 2>&1
    local rc=$?
    [ "$rc" = "$want" ] || fail "$* exited $rc, want $want: $(head -c 400 "$tmp/out")"
    [ -z "$pat" ] || grep -q -- "$pat" "$tmp/out" || fail "$*: no '$pat' in: $(head -c 400 "$tmp/out")"
    echo "  $* -> $rc"
}
unset FOXJIT_TARGET
manifest="$tmp/m"
printf 'column_sum rows=8192 cols=42\n' > "$manifest"

expect 2 "FOXJIT_TARGET=bogus: 'bogus' is not an arch name" \
    env FOXJIT_TARGET=bogus "$foxjit" warm --manifest "$manifest" --cache-dir "$tmp/c"
[ ! -d "$tmp/c" ] || [ -z "$(ls "$tmp/c"/*.fjc 2>/dev/null)" ] || fail "a refused warm built entries"
expect 2 "--arch given twice ('sm_89', then 'sm_90')" \
    "$foxjit" warm --arch sm_89 --arch sm_90 --manifest "$manifest" --cache-dir "$tmp/c"
# An explicit --arch wins over the variable, even a bad one.
expect 0 "for sm_90" env FOXJIT_TARGET=bogus "$foxjit" warm --arch sm_90 --manifest "$manifest" \
    --cache-dir "$tmp/c" --quiet
if [ -e /dev/nvidiactl ]; then
    echo "  (a GPU driver is here: warm's choice without --arch follows the GPU; not checked)"
else
    expect 0 "for compute_89" env FOXJIT_TARGET=compute_89 "$foxjit" warm \
        --manifest "$manifest" --cache-dir "$tmp/c" --quiet
    expect 0 "for sm_89,sm_90" env FOXJIT_TARGET=native "$foxjit" warm \
        --manifest "$manifest" --cache-dir "$tmp/c" --quiet
fi

: > "$tmp/empty"
expect 2 "lists no op shapes" "$foxjit" warm --arch sm_90 --manifest "$tmp/empty" \
    --cache-dir "$tmp/c"

expect 1 "FOXJIT_TARGET=bogus is not valid" env FOXJIT_TARGET=bogus "$foxjit" info --no-probe \
    --cache-dir "$tmp/c"
grep -q "^cache: $tmp/c" "$tmp/out" || fail "info stopped printing at the bad override"
expect 0 "target override: FOXJIT_TARGET=compute_89" env FOXJIT_TARGET=compute_89 "$foxjit" \
    info --no-probe --cache-dir "$tmp/c"
touch "$tmp/file"
expect 1 "exists and is not a directory" "$foxjit" info --no-probe --cache-dir "$tmp/file"
# A cache not created yet is not a failure: the first compile creates it.
expect 0 "does not exist yet" "$foxjit" info --no-probe --cache-dir "$tmp/not-yet"
expect 0 "does not exist yet" env FOXJIT_CACHE_DIR="$tmp/not-yet-either" "$foxjit" info --no-probe

# The commands that look after a cache do not make one where none is.
for cmd in clear "prune --max-bytes 1M" "verify --remove"; do
    expect 1 "there is no cache at $tmp/typo/cahce (nothing was changed)" \
        "$foxjit" $cmd --cache-dir "$tmp/typo/cahce"
    [ ! -e "$tmp/typo" ] || fail "fox-jit $cmd created $tmp/typo"
done

# warm --shared under a strict umask: every directory it makes, parents
# included, is readable by other users (a layer they could not open was
# reported as "build it with warm --shared").
(umask 077; "$foxjit" warm --shared --arch sm_90 --manifest "$manifest" \
    --cache-dir "$tmp/sh/p1/p2/layer" --quiet > /dev/null 2>&1) || fail "warm --shared failed"
for d in "$tmp/sh" "$tmp/sh/p1" "$tmp/sh/p1/p2" "$tmp/sh/p1/p2/layer"; do
    [ "$(stat -c %a "$d")" = 755 ] || fail "warm --shared made $d $(stat -c %a "$d"), not 755"
done
echo "  warm --shared under umask 077: its directories are 755"

# A foreign file named like an entry is neither evicted nor counted: a cap
# it alone exceeds must not evict the real entries.
"$foxjit" warm --arch sm_90 --manifest "$manifest" --cache-dir "$tmp/fc" --quiet > /dev/null 2>&1
real=$(ls "$tmp/fc"/*.fjc | wc -l)
head -c 100000 /dev/urandom > "$tmp/fc/0123456789abcdef0123456789abcdef.fjc"
expect 0 "is not fox-jit's (0123456789abcdef0123456789abcdef.fjc, a file without fox-jit's header; 100000 bytes); fox-jit neither counts nor removes it" \
    "$foxjit" prune --max-bytes 96K --cache-dir "$tmp/fc"
grep -q "evicted 0 entries" "$tmp/out" || fail "prune evicted real entries for a foreign file"
[ "$(ls "$tmp/fc"/*.fjc | wc -l)" = $((real + 1)) ] || fail "entries were removed"

# verify --remove says, file by file, why a bad file was kept: the foreign
# one is not fox-jit's.
expect 1 "kept: not fox-jit's; move it out of the cache yourself" \
    "$foxjit" verify --remove --cache-dir "$tmp/fc"
grep -q "(0 removed, 1 kept: see above)" "$tmp/out" ||
    fail "verify --remove summary: $(tail -n 1 "$tmp/out")"
[ -e "$tmp/fc/0123456789abcdef0123456789abcdef.fjc" ] || fail "verify --remove deleted a foreign file"

# A dead writer's temp file is swept when a writable cache is opened, even
# by a run that stores nothing; a fresh one (a live writer's) stays.
stale="$tmp/fc/.tmp.0123456789abcdef0123456789abcdef.host.0123456789abcdef"
fresh="$tmp/fc/.tmp.fedcba9876543210fedcba9876543210.host.fedcba9876543210"
echo x > "$stale"; touch -d '2 hours ago' "$stale"; echo x > "$fresh"
rm -f "$tmp/fc/0123456789abcdef0123456789abcdef.fjc"
expect 0 "0 compiled" "$foxjit" warm --arch sm_90 --manifest "$manifest" --cache-dir "$tmp/fc" \
    --quiet
[ ! -e "$stale" ] || fail "a 2-hour-old temp file survived a warm that stored nothing"
[ -e "$fresh" ] || fail "a fresh temp file (a live writer's) was removed"

# A directory named like an entry: reported and kept, with one piece of advice.
mkdir "$tmp/fc/00112233445566778899aabbccddeeff.fjc"
expect 1 "kept: verify removes only fox-jit's files; remove the directory yourself (rm -r)" \
    "$foxjit" verify --remove --cache-dir "$tmp/fc"
grep -q "move it out of the cache" "$tmp/out" && fail "verify gave the directory two pieces of advice"
rmdir "$tmp/fc/00112233445566778899aabbccddeeff.fjc"

# A GPU present (the fake driver's): warm builds for it, and one NVRTC
# cannot target is refused, not built around as if there were no GPU.
if [ -n "$fake_cuda" ]; then
    expect 0 "for sm_90" env FOXJIT_CUDA_LIBRARY="$fake_cuda" FAKE_CUDA_CC=90 "$foxjit" warm \
        --manifest "$manifest" --cache-dir "$tmp/g" --quiet
    expect 1 "the GPU is sm_70, which NVRTC .* cannot target" env FOXJIT_CUDA_LIBRARY="$fake_cuda" \
        FAKE_CUDA_CC=70 "$foxjit" warm --manifest "$manifest" --cache-dir "$tmp/g70"
    grep -q "give --arch LIST" "$tmp/out" || fail "warm on sm_70 does not say what to do"
    [ ! -d "$tmp/g70" ] || [ -z "$(ls "$tmp/g70"/*.fjc 2>/dev/null)" ] ||
        fail "warm built kernels the sm_70 GPU cannot use"
    expect 0 "for sm_89" env FOXJIT_CUDA_LIBRARY="$fake_cuda" FAKE_CUDA_CC=70 "$foxjit" warm \
        --arch sm_89 --manifest "$manifest" --cache-dir "$tmp/g70" --quiet
    expect 1 "FOXJIT_TARGET=compute_100 cannot be used here" env FOXJIT_CUDA_LIBRARY="$fake_cuda" \
        FAKE_CUDA_CC=90 FOXJIT_TARGET=compute_100 "$foxjit" info --no-probe --cache-dir "$tmp/g"
    grep -q "older than the target" "$tmp/out" || fail "info does not say why compute_100 is refused"
    expect 0 "target override: FOXJIT_TARGET=compute_89 (a testing aid)" \
        env FOXJIT_CUDA_LIBRARY="$fake_cuda" FAKE_CUDA_CC=90 FOXJIT_TARGET=compute_89 "$foxjit" \
        info --no-probe --cache-dir "$tmp/g"
    expect 2 "older than the target" env FOXJIT_CUDA_LIBRARY="$fake_cuda" FAKE_CUDA_CC=90 \
        FOXJIT_TARGET=compute_100 "$foxjit" warm --manifest "$manifest" --cache-dir "$tmp/g"
else
    echo "  (no fake driver given: the GPU-present checks are not run)"
fi

# An arch named twice (in two spellings) is built once.
expect 0 "warm: 4 variants for sm_90:" "$foxjit" warm --arch sm_90,sm_090 \
    --manifest "$manifest" --cache-dir "$tmp/c"

# --precision: the heads' and the CfC's kernels at each precision asked for
# (their TF32 entries listed as such), every other kernel once; a bad list
# is bad usage and builds nothing.
printf 'heads_seq d=8 e=4 h=1\ncolumn_sum rows=8192 cols=42\n' > "$tmp/mp"
expect 0 "warm: 6 variants for sm_90: 6 compiled" "$foxjit" warm --arch sm_90 \
    --precision float32,tf32 --manifest "$tmp/mp" --cache-dir "$tmp/p"
expect 0 "heads_seq tf32 " "$foxjit" list --cache-dir "$tmp/p"
expect 0 "warm: 5 variants for sm_90: 0 compiled" "$foxjit" warm --arch sm_90 \
    --precision tf32 --manifest "$tmp/mp" --cache-dir "$tmp/p"
for bad in fp16 float32, float32,,tf32 TF32; do
    expect 2 "give float32, tf32 or float32,tf32" "$foxjit" warm --arch sm_90 \
        --precision "$bad" --manifest "$tmp/mp" --cache-dir "$tmp/p2"
done
[ ! -d "$tmp/p2" ] || fail "a warm with a bad --precision made a cache"
expect 2 "--precision given twice ('tf32', then 'float32')" "$foxjit" warm --arch sm_90 \
    --precision tf32 --precision float32 --manifest "$tmp/mp" --cache-dir "$tmp/p2"
expect 2 "so --precision has no use beside it" "$foxjit" warm --print-manifest --precision tf32

expect 2 "no command 'bogus' to describe" "$foxjit" help bogus
# Both listed beside the commands are described too.
expect 0 "usage: fox-jit version" "$foxjit" help version
expect 0 "usage: fox-jit <command>" "$foxjit" help help
# --print-manifest builds nothing: an option only a build uses, beside it,
# is refused rather than ignored unchecked.
expect 2 "so --manifest has no use beside it" "$foxjit" warm --print-manifest \
    --manifest garbage --arch banana
expect 2 "so --arch has no use beside it" "$foxjit" warm --arch banana --print-manifest
# --print-manifest reads the whole command line first.
expect 2 "unrecognized option" "$foxjit" warm --print-manifest --bogus
expect 0 "column_sum rows=2 cols=63493" "$foxjit" warm --print-manifest
for cmd in warm info list verify clear prune bench; do
    "$foxjit" "$cmd" --help 2>&1 | grep -q "^Exit status" || fail "fox-jit $cmd --help has no exit-status line"
done
expect 0 "usage: fox-jit list" "$foxjit" help list

# The cache itself, or a layer twice, in FOXJIT_CACHE_READONLY_DIRS: searched
# and listed once.
expect 0 "entries, .* bytes in $tmp/c\$" env FOXJIT_CACHE_READONLY_DIRS="$tmp/c:$tmp/c/" \
    "$foxjit" list --cache-dir "$tmp/c"
"$foxjit" warm --arch sm_90 --manifest "$manifest" --cache-dir "$tmp/layer2" --quiet > /dev/null
expect 0 "bytes in $tmp/c + $tmp/layer2\$" env \
    FOXJIT_CACHE_READONLY_DIRS="$tmp/layer2:$tmp/c:$tmp/layer2/" "$foxjit" list --cache-dir "$tmp/c"

# A bad manifest is bad usage (2) even where NVRTC is missing (1 otherwise).
expect 2 "cannot read manifest" env FOXJIT_NVRTC_LIBRARY=/nonexistent/libnvrtc.so "$foxjit" \
    warm --manifest "$tmp/no-such-manifest" --cache-dir "$tmp/c"
expect 1 "" env FOXJIT_NVRTC_LIBRARY=/nonexistent/libnvrtc.so "$foxjit" warm --arch sm_90 \
    --manifest "$manifest" --cache-dir "$tmp/c"

# info: a toolchain variable pointing at nothing fails it (1); the rest is
# still printed.
expect 1 "NVRTC and CCCL: FOXJIT_CCCL_INCLUDE=$tmp/nothing holds no CCCL headers" \
    env FOXJIT_CCCL_INCLUDE="$tmp/nothing" "$foxjit" info --no-probe --cache-dir "$tmp/c"
grep -q "^cache: $tmp/c" "$tmp/out" || fail "info stopped printing at the bad FOXJIT_CCCL_INCLUDE"

# An option of a sibling command is named, not met with the bare usage.
expect 2 "fox-jit list: --remove is not an option of list (fox-jit verify --remove" \
    "$foxjit" list --remove --cache-dir "$tmp/c"
expect 2 "--max-bytes is not an option of clear (fox-jit prune --max-bytes N" \
    "$foxjit" clear --max-bytes 5 --cache-dir "$tmp/c"
# A column_sum shape the op refuses is not built.
printf 'column_sum rows=2147483647 cols=2147483647\n' > "$tmp/huge"
expect 2 "rows \* cols = 2147483647 x 2147483647 is past the limit (below 2^40 elements)" \
    "$foxjit" warm --arch sm_90 --manifest "$tmp/huge" \
    --cache-dir "$tmp/c"
grep -q -- "$tmp/huge: line 1 (column_sum)" "$tmp/out" || fail "a range error does not name the manifest"
printf 'column_sum rows=99999999999999999999 cols=3\n' > "$tmp/big"
expect 2 "$tmp/big: line 1: rows=99999999999999999999 is too large (max 9223372036854775807)" \
    "$foxjit" warm --arch sm_90 --manifest "$tmp/big" --cache-dir "$tmp/c"
printf 'column_sum rows=0 cols=5\n' > "$tmp/zero"
expect 2 "outside the supported range \[1, 2147483647\] (docs/kernels.md, section 1)" \
    "$foxjit" warm \
    --arch sm_90 --manifest "$tmp/zero" --cache-dir "$tmp/c"

# A manifest with no end is refused after 1 MiB (a virtual memory limit
# keeps a reader without that bound from taking the machine's memory).
expect 2 "manifest /dev/zero is larger than 1048576 bytes (1 MiB)" \
    bash -c 'ulimit -v 4000000; exec timeout 60 "$0" warm --arch sm_90 --manifest /dev/zero \
    --cache-dir "$1"' "$foxjit" "$tmp/c"
expect 2 "manifest on stdin is larger than 1048576 bytes (1 MiB)" \
    bash -c 'yes | (ulimit -v 4000000; exec timeout 60 "$0" warm --arch sm_90 --manifest - \
    --cache-dir "$1")' "$foxjit" "$tmp/c"
expect 2 "fox-jit prune: --max-bytes is empty; give a number of bytes like 500M or 2G" \
    "$foxjit" prune --max-bytes '' --cache-dir "$tmp/c"

# A symbolic link and a foreign file named like entries: one rule (never
# deleted, never counted, "not fox-jit's: move it out of the cache") from
# verify, verify --remove, clear and prune.
"$foxjit" warm --arch sm_90 --manifest "$manifest" --cache-dir "$tmp/sl" --quiet > /dev/null 2>&1
ln -s /etc/hostname "$tmp/sl/00112233445566778899aabbccddeeff.fjc"
expect 1 "00112233445566778899aabbccddeeff.fjc: is a symbolic link (fox-jit never follows links in its cache); not fox-jit's, so fox-jit leaves it alone: move it out of the cache" \
    "$foxjit" verify --cache-dir "$tmp/sl"
grep -q "run fox-jit verify" "$tmp/out" && fail "verify tells the user to run verify"
expect 1 "kept: not fox-jit's; move it out of the cache yourself" \
    "$foxjit" verify --remove --cache-dir "$tmp/sl"
expect 0 "holds a file named like an entry that is not fox-jit's (00112233445566778899aabbccddeeff.fjc, a symbolic link" \
    "$foxjit" clear --cache-dir "$tmp/sl"
grep -q "left 1 file that is not fox-jit's" "$tmp/out" || fail "clear does not say what it left"
[ -L "$tmp/sl/00112233445566778899aabbccddeeff.fjc" ] || fail "a symbolic link was removed"
# prune counts fox-jit's entries only, at any cap: the same foreign 5-byte
# file is "0 bytes of entries left" whether or not the cap is reached.
printf 'hello' > "$tmp/sl/0123456789abcdef0123456789abcdef.fjc"
for cap in 1G 0; do
    expect 0 "0 bytes of entries left; left 2 files that are not fox-jit's (5 bytes" \
        "$foxjit" prune --max-bytes $cap --cache-dir "$tmp/sl"
    grep -q "holds 2 files named like entries that are not fox-jit's" "$tmp/out" ||
        fail "prune --max-bytes $cap does not warn about the files it leaves"
done
# One warning for the whole warm, not one per store (4K is less than one
# entry: every store evicts, and meets the two files; warm then says the
# cap is too small, and exits 1).
expect 1 "raise the cap" env FOXJIT_CACHE_MAX_BYTES=4K "$foxjit" warm --arch sm_89,sm_90 \
    --manifest "$manifest" --cache-dir "$tmp/sl" --quiet
n=$(grep -c "not fox-jit's" "$tmp/out")
[ "$n" = 1 ] || fail "the foreign files were warned about $n times in one warm"

expect 2 "--samples wants a whole number from 1 to 100000, not 'abc'" \
    "$foxjit" bench --samples abc
expect 2 "not '0'" "$foxjit" bench --samples 0
expect 2 "--precision wants float32 or tf32, not 'fp16'" "$foxjit" bench --precision fp16

if [ "$failed" = 0 ]; then echo "fox-jit CLI: all checks passed"; else exit 1; fi
