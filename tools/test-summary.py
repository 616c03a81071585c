#!/usr/bin/env python3
"""tools/test-summary.py TESTLOG.json...: the closing note of
tools/run-tests.sh and its last line, "N passed, M failed, K skipped",
over every meson test log given (the main run, valgrind's, the ASan and
TSan builds') plus the checks that are not meson runs, which run-tests.sh
lists in the file FOXJIT_NOTES_FILE names, one "name:passed|failed|skipped:why"
a line. The
fault-tolerance figures the tests print (FOXJIT-COUNT lines) are summed
from the main run and the fuzz log."""
import json, os, re, sys
counts = {"OK": 0, "FAIL": 0, "SKIP": 0, "TIMEOUT": 0, "ERROR": 0, "EXPECTEDFAIL": 0,
          "UNEXPECTEDPASS": 0}
figures = {}
def gather(text):
    for name, value in re.findall(r"^FOXJIT-COUNT (\S+) (-?\d+)$", text or "", re.M):
        figures[name] = figures.get(name, 0) + int(value)
for path in sys.argv[1:]:
    if not os.path.exists(path):
        continue
    for line in open(path):
        line = line.strip()
        if line:
            r = json.loads(line)
            counts[r.get("result", "ERROR")] = counts.get(r.get("result", "ERROR"), 0) + 1
            if "valgrind" not in path and "build-asan" not in path and "build-tsan" not in path:
                gather(r.get("stdout"))
passed = counts["OK"] + counts["EXPECTEDFAIL"]
failed = counts["FAIL"] + counts["TIMEOUT"] + counts["ERROR"] + counts["UNEXPECTEDPASS"]
skipped = counts["SKIP"]
extra_lines = []
notes_file = os.environ.get("FOXJIT_NOTES_FILE")
notes = open(notes_file).read().splitlines() if notes_file and os.path.exists(notes_file) else []
for note in notes:
    if not note:
        continue
    name, state, why = (note.split(":", 2) + ["", ""])[:3]
    if state == "passed":
        passed += 1
    elif state == "failed":
        failed += 1
    else:
        skipped += 1
    if why:
        extra_lines.append("%s %s: %s" % (name, state, why))
fuzz_log = "build/meson-logs/fuzz.txt"
if os.path.exists(fuzz_log):
    gather(open(fuzz_log).read())
if figures:
    f = figures
    print("reliability: %d warm processes SIGKILLed (%d mid-write), %d torn entries loaded; "
          "%d concurrent writers; %d write faults injected (+%d through the JIT); "
          "%d corrupt entries rejected (+%d recompiled through the JIT); %d unsafe caches "
          "refused; fuzz executions: %d cache entry, %d manifest"
          % (f.get("kills", 0), f.get("kills_mid_write", 0), f.get("torn_entries_loaded", 0),
             f.get("concurrent_writers", 0), f.get("injected_write_faults", 0),
             f.get("jit_injected_faults", 0), f.get("corrupt_entries", 0),
             f.get("jit_corrupt_recompiled", 0), f.get("unsafe_refusals", 0),
             f.get("fuzz_execs_cache_entry", 0), f.get("fuzz_execs_manifest", 0)))
for line in extra_lines:
    print(line)
print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
