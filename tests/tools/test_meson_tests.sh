#!/bin/bash
# tools/meson-tests.py, which tools/gpu-check.sh runs the unit suite by: the
# suite's tests with the arguments meson.build gives them, their programs
# where the build is, the paths of a build carried elsewhere rewritten, and
# exit status 2 for an unknown suite or folder.
# Usage: test_meson_tests.sh SCRIPT BUILD_ROOT
set -u
script=$1 build=$2
fail=0
bad() { echo "FAIL: $*"; fail=1; }

out=$(python3 "$script" "$build" unit) || bad "exit status $? for the unit suite"
n=$(printf '%s\n' "$out" | grep -c .)
want=$(python3 -c 'import json, sys
print(sum(1 for t in json.load(open(sys.argv[1]))
          if any(s.endswith(":unit") for s in t["suite"])))' "$build/meson-info/intro-tests.json")
[ "$n" = "$want" ] && [ "$n" -gt 0 ] || bad "$n commands for $want unit tests"
# Every program exists; unit_step_calls has its recording, an existing file.
while IFS=$'\t' read -r name cmd; do
    eval "words=($cmd)"
    prog=
    for w in "${words[@]}"; do
        case "$w" in env|*=*) continue;; esac
        prog=$w; break
    done
    [ -x "$prog" ] || bad "$name: $prog is not a program"
    [ "$(basename "$prog")" = "$name" ] || bad "$name: named after $prog"
done <<< "$out"
line=$(printf '%s\n' "$out" | grep "^unit_step_calls	") || bad "no unit_step_calls"
eval "words=(${line#*	})"
[ "${#words[@]}" = 2 ] && [ -f "${words[1]}" ] &&
    case "${words[1]}" in */tests/unit/step_calls.txt) true;; *) false;; esac ||
    bad "unit_step_calls without its recording: ${line#*	}"

# A build carried to another folder: its paths follow it.
moved=$(mktemp -d)
trap 'rm -rf "$moved"' EXIT
mkdir -p "$moved/build"
cp -r "$build/meson-info" "$moved/build/"
out2=$(python3 "$script" "$moved/build" unit) || bad "exit status $? for the moved build"
printf '%s\n' "$out2" | grep -q "$moved/build/tests/unit_step_calls " ||
    bad "the moved build's programs are not under it: $(printf '%s\n' "$out2" | head -1)"
line=$(printf '%s\n' "$out2" | grep "^unit_step_calls	")
eval "words=(${line#*	})"
[ -f "${words[1]:-}" ] || bad "the moved build's unit_step_calls lost its recording: ${line#*	}"
if printf '%s\n' "$out2" | grep -q -F "$(cd "$build" && pwd)/"; then
    bad "a path into the old build is left"
fi

python3 "$script" "$build" no-such-suite > /dev/null 2>&1
[ $? = 2 ] || bad "an unknown suite does not exit 2"
python3 "$script" "$moved" unit > /dev/null 2>&1
[ $? = 2 ] || bad "a folder without meson-info does not exit 2"
[ $fail = 0 ] && echo "meson-tests: $n unit commands, paths follow a moved build"
exit $fail
