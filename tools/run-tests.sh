#!/bin/sh
# Set-up command 2: install what is missing, build, and run every test suite
# (unit, compile, gpu, and the fault suite). Without a GPU the gpu suite is
# reported as skipped; FOXJIT_REQUIRE_GPU=1 makes that a failure. Extra
# arguments go to `meson test` (e.g. --suite unit).
set -eu
cd "$(dirname "$0")/.."
sh tools/install-deps.sh
cuda="${CUDA_HOME:-/usr/local/cuda}"
[ -f build/build.ninja ] || meson setup build -Dtoolkit="$cuda"
ninja -C build
rc=0
meson test -C build --print-errorlogs "$@" || rc=$?
# One plain summary line from meson's JSON log.
python3 - build/meson-logs/testlog.json <<'PY'
import json, sys
counts = {"OK": 0, "FAIL": 0, "SKIP": 0, "TIMEOUT": 0, "ERROR": 0, "EXPECTEDFAIL": 0,
          "UNEXPECTEDPASS": 0}
for line in open(sys.argv[1]):
    line = line.strip()
    if line:
        r = json.loads(line).get("result", "ERROR")
        counts[r] = counts.get(r, 0) + 1
failed = counts["FAIL"] + counts["TIMEOUT"] + counts["ERROR"] + counts["UNEXPECTEDPASS"]
print("%d passed, %d failed, %d skipped" % (counts["OK"] + counts["EXPECTEDFAIL"], failed,
                                            counts["SKIP"]))
PY
exit $rc
