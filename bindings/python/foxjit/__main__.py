"""python -m foxjit ARGS: the fox-jit command line (warm, info, list,
verify, clear, prune, bench) that the wheel installs as `fox-jit` beside
this interpreter's other scripts. `python -m foxjit --help` says more."""

import os
import shutil
import sys
import sysconfig


def command():
    """The fox-jit program of this installation: in the scripts directory of
    the install scheme the package is in (a venv's bin/, ~/.local/bin for
    --user), else the first on PATH; None when there is none."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for scheme in sysconfig.get_scheme_names():
        try:
            paths = sysconfig.get_paths(scheme)
        except KeyError:
            continue
        if os.path.realpath(paths.get("purelib", "")) == os.path.realpath(here):
            exe = os.path.join(paths["scripts"], "fox-jit")
            if os.access(exe, os.X_OK):
                return exe
    return shutil.which("fox-jit")


def main(argv=None):
    args = sys.argv[1:] if argv is None else list(argv)
    exe = command()
    if exe is None:
        sys.stderr.write(
            "fox-jit: no fox-jit command found (not beside this Python's scripts, not on "
            "PATH): this foxjit package was not installed from its wheel. Install it with "
            "`pip install .` at the repository root, or build fox-jit with meson "
            "(./tools/build-and-warm.sh).\n")
        return 1
    try:
        os.execv(exe, ["fox-jit"] + args)
    except OSError as e:
        sys.stderr.write("fox-jit: cannot run %s: %s\n" % (exe, e))
        return 1


if __name__ == "__main__":
    sys.exit(main())
