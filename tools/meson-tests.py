#!/usr/bin/env python3
"""tools/meson-tests.py BUILD SUITE: the commands of a meson suite's tests,
one a line, for running them where meson is not (a GPU machine given a
build made elsewhere): the test program's name, a tab, then the command as
shell words (env NAME=VALUE ... program args), to eval.

Read from BUILD/meson-info (what `meson introspect --tests` reads), so a
test's arguments and environment are the ones meson.build gives it and
cannot drift from them. The build's and the source tree's absolute paths
are rewritten to where BUILD and this script's repository are now (the
build may have been carried to another machine or folder); a test's
LD_LIBRARY_PATH is followed by the caller's. Exit status 2 when BUILD has
no meson-info or SUITE no test."""

import json
import os
import shlex
import sys


def main(argv):
    if len(argv) != 3:
        print("usage: tools/meson-tests.py BUILD SUITE", file=sys.stderr)
        return 2
    build = os.path.abspath(argv[1])
    suite = argv[2]
    info = os.path.join(build, "meson-info")
    try:
        with open(os.path.join(info, "meson-info.json")) as f:
            dirs = json.load(f)["directories"]
        with open(os.path.join(info, "intro-tests.json")) as f:
            tests = json.load(f)
    except (OSError, ValueError, KeyError) as e:
        print("meson-tests: %s is not a meson build folder with its meson-info (%s)"
              % (build, e), file=sys.stderr)
        return 2
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # The build folder first: it may lie inside the source tree.
    moves = sorted(((dirs["build"], build), (dirs["source"], source)),
                   key=lambda m: -len(m[0]))

    def here(word):
        if word.startswith("/"):
            word = os.path.normpath(word)       # build/../tests/x: the source's
        for old, new in moves:
            if word == old or word.startswith(old + "/"):
                return new + word[len(old):]
        return word

    found = 0
    for t in tests:
        if not any(s == suite or s.endswith(":" + suite) for s in t.get("suite", [])):
            continue
        cmd = [here(w) for w in t["cmd"]]
        env = []
        for k, v in sorted((t.get("env") or {}).items()):
            v = here(v)
            if k == "LD_LIBRARY_PATH" and os.environ.get(k):
                v += ":" + os.environ[k]        # the caller's (a carried libcmocka) after
            env.append("%s=%s" % (k, v))
        words = (["env"] + env if env else []) + cmd
        print("%s\t%s" % (os.path.basename(cmd[0]), " ".join(shlex.quote(w) for w in words)))
        found += 1
    if not found:
        print("meson-tests: no test of suite %r in %s" % (suite, build), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
