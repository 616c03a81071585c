#!/bin/bash
# scripts (no GPU): tools/sass.py on a cache that fox-jit warm builds with
# NVRTC here. list and extract (every cubin an sm_90 CUDA ELF, its key
# beside it), a file that is not an entry and a truncated entry skipped with
# the reason, a selection naming several entries refused with the
# candidates, bad usage; the control-bit decoder and the loop summary on a
# crafted listing with known bits. Where a cuobjdump is found (CUOBJDUMP,
# PATH, CUDA_HOME, /usr/local/cuda) it also disassembles the extracted entry;
# where none is, the refusal says where to get one.
#   test_sass_tool.sh tools/sass.py build/tools/fox-jit
set -u
sass=$1 foxjit=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

printf 'column_sum rows=8192 cols=42\n' |
    "$foxjit" warm --arch sm_90 --manifest - --cache-dir "$tmp/c" --quiet > "$tmp/warm.log" 2>&1 ||
    { cat "$tmp/warm.log"; echo "FAIL: fox-jit warm could not build the test cache"; exit 1; }
n=$(ls "$tmp/c"/*.fjc | wc -l)
[ "$n" -ge 4 ] || fail "expected at least 4 colsum variants in the cache, got $n"

# list: every entry, its program and dims (the tiles' and the split form's).
python3 "$sass" list "$tmp/c" > "$tmp/list" 2> "$tmp/list.err" || fail "list exited $?"
grep -q "^$n of $n entries" "$tmp/list" || fail "list does not count $n entries: $(tail -1 "$tmp/list")"
nt=$(grep -c ' colsum_tiles .* sm_90 .* cubin .*COLS=42' "$tmp/list")
ns=$(grep -c ' colsum_split .* sm_90 .* cubin .*ROWS_PER_THREAD=' "$tmp/list")
[ "$nt" -ge 2 ] && [ $((nt + ns)) = "$n" ] ||
    fail "list rows lack program, target, kind or dims: $(head -2 "$tmp/list")"

# Junk and a truncated entry are skipped with the reason; the rest still listed.
echo "not an entry" > "$tmp/c/0000junk.fjc"
first=$(ls "$tmp/c"/*.fjc | grep -v junk | head -1)
head -c 200 "$first" > "$tmp/c/0001short.fjc"
python3 "$sass" list "$tmp/c" > "$tmp/list2" 2> "$tmp/list2.err" || fail "list with junk exited $?"
grep -q "skipping 0000junk.fjc: not a fox-jit cache entry" "$tmp/list2.err" ||
    fail "junk file not reported: $(cat "$tmp/list2.err")"
grep -q "skipping 0001short.fjc: truncated" "$tmp/list2.err" ||
    fail "truncated entry not reported: $(cat "$tmp/list2.err")"
grep -q "^$n of $n entries" "$tmp/list2" || fail "good entries lost next to bad ones"
rm -f "$tmp/c/0000junk.fjc" "$tmp/c/0001short.fjc"

# extract: the cubins as the GPU would load them, and their keys.
python3 "$sass" extract "$tmp/c" "$tmp/out" > "$tmp/extract" || fail "extract exited $?"
for f in "$tmp/out"/*.cubin; do
    python3 - "$f" <<'PY' || fail "$(basename "$f") is not a CUDA ELF"
import struct, sys
b = open(sys.argv[1], "rb").read()
assert b[:4] == b"\x7fELF", "no ELF magic"
assert struct.unpack_from("<H", b, 18)[0] == 190, "e_machine is not EM_CUDA (190)"
PY
    key=${f%.cubin}.key
    grep -qE "^program colsum_(tiles|split)$" "$key" 2>/dev/null ||
        fail "no key beside $(basename "$f")"
    grep -q "^target sm_90 cubin$" "$key" || fail "key of $(basename "$f") lacks its target"
done
[ "$(ls "$tmp/out"/*.cubin | wc -l)" = "$n" ] || fail "extract wrote $(ls "$tmp/out"/*.cubin | wc -l) cubins, not $n"

# A selection of several entries is refused, with the candidates.
python3 "$sass" sass "$tmp/c" --program colsum_tiles --cuobjdump /bin/true > "$tmp/sel" 2>&1
rc=$?
[ $rc = 2 ] || fail "an ambiguous selection exited $rc, not 2"
grep -q "names $nt cubin entries" "$tmp/sel" || fail "ambiguous selection message: $(head -1 "$tmp/sel")"
# A cache warmed for two archs holds an entry per arch, with the same dims
# (the CfC step's); --arch picks one.
printf 'cfc n_in=40 n_hid=128\n' |
    "$foxjit" warm --arch sm_89,sm_90 --manifest - --cache-dir "$tmp/c2" --quiet > /dev/null 2>&1 ||
    fail "fox-jit warm for two archs failed"
python3 "$sass" sass "$tmp/c2" --program cfc --cuobjdump /bin/true > "$tmp/sel2" 2>&1
[ $? = 2 ] || fail "two archs' entries of one program were not refused"
grep -q "names 2 cubin entries; narrow it with --program, --arch and --dim" "$tmp/sel2" ||
    fail "two archs' entries refused without the --arch hint: $(head -1 "$tmp/sel2")"
python3 "$sass" list "$tmp/c2" --arch sm_89 > "$tmp/list89" 2>&1 || fail "list --arch exited $?"
grep -q "^1 of 2 entries" "$tmp/list89" || fail "list --arch sm_89: $(tail -1 "$tmp/list89")"
grep -q ' cfc  *sm_89 ' "$tmp/list89" || fail "list --arch sm_89 lacks the sm_89 entry"
python3 - "$sass" "$tmp/c2" <<'PY' || fail "--arch does not narrow two archs' entries to one"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("sass", sys.argv[1])
sass = importlib.util.module_from_spec(spec); spec.loader.exec_module(sass)
entries = sass.read_cache(sys.argv[2])
got = [e for e in sass.select(entries, "cfc", {}, "sm_90") if e.kind == sass.KIND_CUBIN]
assert len(got) == 1 and got[0].target == "sm_90", [(e.target, e.dims) for e in got]
PY
python3 "$sass" list "$tmp/c" --dim BAD > /dev/null 2>&1
[ $? = 2 ] || fail "--dim without = accepted"
python3 "$sass" list "$tmp/nowhere" > "$tmp/nodir" 2>&1
[ $? = 1 ] || fail "a missing cache directory did not exit 1"
grep -q "fox-jit warm --arch sm_90 --cache-dir" "$tmp/nodir" || fail "missing directory: no hint"

# The decoder and the loop summary on a crafted listing: a loop with a
# global load setting scoreboard 5, a barrier, and an add waiting on 5.
python3 - "$sass" <<'PY' || fail "control-bit decoding or loop summary"
import importlib.util, sys
spec = importlib.util.spec_from_file_location("sass", sys.argv[1])
sass = importlib.util.module_from_spec(spec); spec.loader.exec_module(sass)
def word(stall, yld, wb, rb, wait):
    return (stall | yld << 4 | wb << 5 | rb << 8 | wait << 11) << 41
assert sass.decode_control(word(5, 1, 2, 7, 0b100001)) == (5, 1, 2, 7, 0b100001)
rows = [(0x10, "LDG.E R4, desc[UR4][R2.64]", word(1, 1, 5, 0, 0)),
        (0x20, "BAR.SYNC.DEFER_BLOCKING 0x0", word(1, 1, 7, 7, 0)),
        (0x30, "LDS.128 R8, [R3]", word(1, 1, 2, 7, 0)),
        (0x40, "FADD R5, R4, R8", word(4, 0, 7, 7, 0b100100)),
        (0x50, "@P0 BRA 0x10", word(5, 1, 7, 7, 0))]
text = "\t\tFunction : k\n" + "".join(
    f"        /*{a:04x}*/                   {t} ;   /* 0x{0:016x} */\n"
    f"                                                /* 0x{h:016x} */\n" for a, t, h in rows)
ins = sass.parse_sass(text)
assert [i.addr for i in ins] == [0x10, 0x20, 0x30, 0x40, 0x50], ins
assert ins[3].wait == 0b100100 and ins[3].stall == 4 and ins[0].wbar == 5, ins
assert sass.loops_of(ins) == [(0x10, 0x50)], sass.loops_of(ins)
summary = sass.summarize_loop(ins, 0x10, 0x50)
assert summary.endswith("LDG BAR wait(sb5)@FADD"), summary
line = sass.format_instr(ins[3])
assert "stall  4" in line and "wait 2,5" in line and line.endswith("FADD R5, R4, R8"), line
PY

# With a cuobjdump: the real thing.
cuobjdump=${CUOBJDUMP:-$(command -v cuobjdump || true)}
for root in "${CUDA_HOME:-}" /usr/local/cuda; do
    [ -z "$cuobjdump" ] && [ -n "$root" ] && [ -x "$root/bin/cuobjdump" ] && cuobjdump=$root/bin/cuobjdump
done
if [ -n "$cuobjdump" ]; then
    dims=$(grep -o 'VEC=[0-9]*' "$tmp/list" | head -1)
    python3 "$sass" sass "$tmp/c" --program colsum_tiles --dim "$dims" --cuobjdump "$cuobjdump" \
        > "$tmp/sass" 2>&1 || fail "sass with $cuobjdump exited $?: $(tail -2 "$tmp/sass")"
    grep -qE "^[0-9a-f]{6}  stall +[0-9]+ .* wait " "$tmp/sass" || fail "no decoded instructions"
    python3 "$sass" loops "$tmp/c" --program colsum_tiles --dim "$dims" --cuobjdump "$cuobjdump" \
        --min-bytes 0 > "$tmp/loops" 2>&1 || fail "loops exited $?"
    grep -q "^== " "$tmp/loops" || fail "loops printed no function"
    echo "disassembled with $cuobjdump"
else
    # Without one, sass says where to get it.
    python3 "$sass" sass "$tmp/c" --program colsum_tiles --dim "$(grep -o 'VEC=[0-9]*' "$tmp/list" | head -1)" \
        > "$tmp/nocuobj" 2>&1
    rc=$?
    [ $rc = 1 ] || fail "sass without a cuobjdump exited $rc, not 1"
    grep -q "pip install nvidia-cuda-cuobjdump" "$tmp/nocuobj" ||
        fail "no cuobjdump: the message does not say what to do: $(cat "$tmp/nocuobj")"
    echo "no cuobjdump here: the disassembly part is not run (its absence is checked)"
fi
[ $failed = 0 ] && echo "sass tool: all checks passed"
exit $failed
