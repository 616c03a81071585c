#!/usr/bin/env python3
"""Read the SASS of fox-jit's compiled kernels from a disk cache, no GPU needed.

`fox-jit warm --arch sm_90 --cache-dir DIR` compiles with NVRTC the same
cubins the GPU would run; this script finds them in DIR, writes them out and
disassembles them with cuobjdump, decoding each instruction's scheduling
control bits (sm_70 and newer): the stall count, the yield flag, the
scoreboards it sets when its result is written and when its operands have
been read, and the scoreboards it waits on before it issues. `loops`
summarizes each loop: its instruction mix and, in order, its barriers,
global loads and the waits on scoreboards last set by a global load (a wait
right after a barrier on loads issued just before it exposes a load's whole
latency).

Commands:
  list DIR                     the cache entries: file, program, target, dims
  extract DIR OUT              write each selected cubin (and its key) to OUT
  sass DIR                     SASS with control bits of the selected entry
  loops DIR                    a summary of each loop of the selected entry

Select an entry with --program NAME, --arch TARGET (sm_90, compute_89: a
cache warmed for several archs holds an entry per arch) and --dim
NAME=VALUE (repeatable); functions with --function NAME. Stdlib only; cuobjdump comes from
--cuobjdump, $CUOBJDUMP, PATH, $CUDA_HOME/bin or /usr/local/cuda/bin (or
`pip install nvidia-cuda-cuobjdump`).

Exit status: 0; 1 when the cache or a tool fails; 2 on bad usage or when the
selection does not name exactly one entry (sass, loops).
"""
import argparse
import collections
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile

MAGIC = b"FOXJITC\n"
HEADER = 64
KIND_CUBIN, KIND_PTX = 1, 2


class Entry:
    def __init__(self, path, kind, key, payload):
        self.path, self.kind, self.key, self.payload = path, kind, key, payload
        fields = {}
        for line in key.splitlines():
            name, _, value = line.partition(" ")
            fields[name] = value
        self.program = fields.get("program", "?")
        self.target = fields.get("target", "?").split(" ")[0]
        self.dims = dict(re.findall(r"-D([A-Za-z_][A-Za-z0-9_]*)=(\S+)",
                                    fields.get("options", "")))
        self.dims.pop("FOXJIT_NVRTC", None)

    def name(self):
        return os.path.basename(self.path)

    def dims_text(self):
        return " ".join(f"{k}={v}" for k, v in self.dims.items())


def parse_entry(path):
    """An Entry, or a string saying why the file is not a readable entry.
    Checks the header and the lengths; `fox-jit verify` checks the hashes."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        return f"cannot read: {e.strerror}"
    if len(data) < HEADER or data[:8] != MAGIC:
        return "not a fox-jit cache entry (no FOXJITC header)"
    version, kind, key_len, _reserved, payload_len = struct.unpack_from("<IIIIQ", data, 8)
    if version != 1:
        return f"entry format {version}, this script reads format 1"
    if HEADER + key_len + payload_len != len(data):
        return "truncated or padded (lengths do not match the file size)"
    key = data[HEADER:HEADER + key_len].decode("utf-8", "replace")
    payload = data[HEADER + key_len:]
    if kind == KIND_CUBIN and payload[:4] != b"\x7fELF":
        return "cubin entry whose payload is not ELF"
    return Entry(path, kind, key, payload)


def read_cache(directory):
    if not os.path.isdir(directory):
        sys.exit(f"sass.py: {directory} is not a directory; make one with "
                 f"`fox-jit warm --arch sm_90 --cache-dir {directory}`")
    entries = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".fjc"):
            continue
        e = parse_entry(os.path.join(directory, name))
        if isinstance(e, Entry):
            entries.append(e)
        else:
            print(f"sass.py: skipping {name}: {e}", file=sys.stderr)
    return entries


def select(entries, program, dims, arch=None):
    out = []
    for e in entries:
        if program and e.program != program:
            continue
        if arch and e.target != arch:
            continue
        if any(e.dims.get(k) != v for k, v in dims.items()):
            continue
        out.append(e)
    return out


def find_cuobjdump(explicit):
    candidates = [explicit, os.environ.get("CUOBJDUMP"), shutil.which("cuobjdump")]
    for root in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root:
            candidates.append(os.path.join(root, "bin", "cuobjdump"))
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    sys.exit("sass.py: cuobjdump not found. Install the CUDA toolkit's, or "
             "`pip install nvidia-cuda-cuobjdump` and pass --cuobjdump PATH "
             "(or set CUOBJDUMP).")


# ---- control bits ------------------------------------------------------------

Instr = collections.namedtuple("Instr", "function addr text stall yield_ wbar rbar wait")

LINE_LO = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\* (0x[0-9a-f]{16}) \*/\s*$")
LINE_HI = re.compile(r"^\s+/\* (0x[0-9a-f]{16}) \*/\s*$")


def decode_control(high_word):
    """sm_70+: the top 23 bits of an instruction's high 64-bit word (bit 41
    on): stall [0:4), yield [4], write scoreboard [5:8), read scoreboard
    [8:11) (7 = none), wait mask [11:17), operand reuse [17:21)."""
    c = high_word >> 41
    return c & 15, (c >> 4) & 1, (c >> 5) & 7, (c >> 8) & 7, (c >> 11) & 63


def parse_sass(text):
    """Instructions of cuobjdump -sass output, with their control bits."""
    out, function, pending = [], None, None
    for line in text.splitlines():
        m = re.search(r"Function : (\S+)", line)
        if m:
            function, pending = m.group(1), None
            continue
        m = LINE_LO.match(line)
        if m:
            pending = (int(m.group(1), 16), m.group(2).rstrip(" ;"))
            continue
        m = LINE_HI.match(line)
        if m and pending:
            stall, yld, wb, rb, wait = decode_control(int(m.group(1), 16))
            out.append(Instr(function, pending[0], pending[1], stall, yld, wb, rb, wait))
            pending = None
    return out


def opcode(text):
    words = [w for w in text.split() if not w.startswith("@")]
    return words[0].split(".")[0] if words else "?"


def format_instr(i):
    sb = lambda v: "-" if v == 7 else str(v)
    waits = ",".join(str(b) for b in range(6) if i.wait >> b & 1) or "-"
    return (f"{i.addr:06x}  stall {i.stall:2d} {'Y' if i.yield_ else ' '} "
            f"set w{sb(i.wbar)} r{sb(i.rbar)}  wait {waits:<11} {i.text}")


GLOBAL_LOADS = ("LDG", "LD")


def loops_of(instrs):
    """(start, end) addresses of backward branches: the loops."""
    spans = []
    for i in instrs:
        m = re.search(r"\bBRA (0x[0-9a-f]+)", i.text)
        if m and int(m.group(1), 16) < i.addr:
            spans.append((int(m.group(1), 16), i.addr))
    return spans


def summarize_loop(instrs, start, end):
    """The loop's mix, then its barriers, global loads and the waits on a
    scoreboard whose last setter, in program order around the loop, is a
    global load (ptxas reuses scoreboards, so the setter decides)."""
    body = [i for i in instrs if start <= i.addr <= end]
    mix = collections.Counter(opcode(i.text) for i in body)
    setter = {}
    for i in body:  # the setters reaching the loop's top from its end
        if i.wbar != 7:
            setter[i.wbar] = opcode(i.text)
    events = []
    for i in body:
        op = opcode(i.text)
        on_loads = [b for b in range(6) if i.wait >> b & 1 and setter.get(b) in GLOBAL_LOADS]
        if op == "BAR":
            events.append("BAR")
        elif on_loads:
            events.append(f"wait(sb{','.join(map(str, on_loads))})@{op}")
        if op in GLOBAL_LOADS and (not events or events[-1] != "LDG"):
            events.append("LDG")
        if i.wbar != 7:
            setter[i.wbar] = op
    top = ", ".join(f"{k} {v}" for k, v in mix.most_common(8))
    return (f"loop {start:06x}-{end:06x}: {len(body)} instructions ({top})\n    "
            + (" ".join(events) or "no barrier, global load or wait on one"))


# ---- commands ----------------------------------------------------------------

def one_entry(args, entries):
    chosen = [e for e in select(entries, args.program, args.dims, args.arch)
              if e.kind == KIND_CUBIN]
    if len(chosen) != 1:
        print(f"sass.py: the selection names {len(chosen)} cubin entries; narrow it with "
              f"--program, --arch and --dim:", file=sys.stderr)
        for e in chosen:
            print(f"  {e.name()}  {e.program}  {e.target}  {e.dims_text()}", file=sys.stderr)
        sys.exit(2)
    return chosen[0]


def disassemble(args, entry):
    tool = find_cuobjdump(args.cuobjdump)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "entry.cubin")
        with open(path, "wb") as f:
            f.write(entry.payload)
        cmd = [tool, "-sass", path]
        if args.function:
            cmd[2:2] = ["-fun", args.function]
        r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"sass.py: {' '.join(cmd[:-1])} failed: {r.stderr.strip()}")
    instrs = parse_sass(r.stdout)
    if not instrs:
        sys.exit(f"sass.py: no instructions{' in ' + args.function if args.function else ''}"
                 f" ({entry.name()})")
    return instrs


def cmd_list(args, entries):
    shown = select(entries, args.program, args.dims, args.arch)
    for e in shown:
        kind = "cubin" if e.kind == KIND_CUBIN else "ptx" if e.kind == KIND_PTX else f"kind {e.kind}"
        print(f"{e.name():40} {e.program:16} {e.target:12} {kind:6} {e.dims_text()}")
    print(f"{len(shown)} of {len(entries)} entries")


def cmd_extract(args, entries):
    os.makedirs(args.out, exist_ok=True)
    shown = select(entries, args.program, args.dims, args.arch)
    for e in shown:
        base = f"{e.program}-{e.target}-{e.name()[:8]}"
        ext = ".cubin" if e.kind == KIND_CUBIN else ".ptx"
        with open(os.path.join(args.out, base + ext), "wb") as f:
            f.write(e.payload.rstrip(b"\0") if e.kind == KIND_PTX else e.payload)
        with open(os.path.join(args.out, base + ".key"), "w") as f:
            f.write(e.key)
        print(os.path.join(args.out, base + ext))
    print(f"{len(shown)} entries written to {args.out}")


def cmd_sass(args, entries):
    instrs = disassemble(args, one_entry(args, entries))
    lo, hi = args.range
    function = None
    for i in instrs:
        if not lo <= i.addr <= hi:
            continue
        if i.function != function:
            function = i.function
            print(f"\n== {function}")
        print(format_instr(i))


def cmd_loops(args, entries):
    instrs = disassemble(args, one_entry(args, entries))
    by_function = collections.OrderedDict()
    for i in instrs:
        by_function.setdefault(i.function, []).append(i)
    for function, body in by_function.items():
        spans = [s for s in loops_of(body) if s[1] - s[0] >= args.min_bytes]
        print(f"== {function}: {len(body)} instructions, {len(spans)} loops of "
              f"{args.min_bytes} bytes or more")
        for start, end in spans:
            print("  " + summarize_loop(body, start, end))


def parse_range(text):
    try:
        lo, _, hi = text.partition(":")
        return int(lo or "0", 16), int(hi, 16) if hi else 1 << 62
    except ValueError:
        raise argparse.ArgumentTypeError(f"--range wants LO:HI in hex, got '{text}'")


def parse_dim(text):
    name, eq, value = text.partition("=")
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"--dim wants NAME=VALUE, got '{text}'")
    return name, value


def main(argv):
    p = argparse.ArgumentParser(prog="tools/sass.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="Example: fox-jit warm --arch sm_90 --cache-dir /tmp/c; "
                                "tools/sass.py loops /tmp/c --program cfc_seq "
                                "--function cfc_seq_backward_rec")
    p.add_argument("command", choices=["list", "extract", "sass", "loops"])
    p.add_argument("cache_dir")
    p.add_argument("out", nargs="?", help="extract: the directory to write to")
    p.add_argument("--program", help="the program (fox-jit list's second column)")
    p.add_argument("--arch", help="the entry's target, e.g. sm_90 (fox-jit list's third "
                   "column)")
    p.add_argument("--dim", action="append", type=parse_dim, default=[],
                   help="NAME=VALUE of the entry's -D options, e.g. N_HID=128")
    p.add_argument("--function", help="one kernel of the program")
    p.add_argument("--range", type=parse_range, default=(0, 1 << 62),
                   help="sass: addresses LO:HI (hex)")
    p.add_argument("--min-bytes", type=int, default=0x400,
                   help="loops: skip loops shorter than this many bytes (default 1024)")
    p.add_argument("--cuobjdump", help="path of cuobjdump")
    args = p.parse_args(argv)
    args.dims = dict(args.dim)
    if args.command == "extract" and not args.out:
        p.error("extract needs an output directory")
    if args.command != "extract" and args.out:
        p.error(f"unexpected argument '{args.out}'")
    entries = read_cache(args.cache_dir)
    {"list": cmd_list, "extract": cmd_extract, "sass": cmd_sass, "loops": cmd_loops}[
        args.command](args, entries)
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    sys.exit(main(sys.argv[1:]))
