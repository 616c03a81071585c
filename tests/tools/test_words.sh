#!/bin/bash
# scripts: the repository speaks of itself only. No tracked file names the
# way it was made ("session", "lent" GPUs) or the trainer it came from as
# "the seed" ("seed's", "seeds'"): where origin matters, it is "the original
# trainer". Random seeds ("the seed is printed", `make_entry_seeds`) are
# not that. Needs git and the checkout (skipped, 77, in a source tarball).
# Usage: test_words.sh SOURCE_ROOT
root=${1:?usage: test_words.sh SOURCE_ROOT}
command -v git > /dev/null && git -C "$root" rev-parse --git-dir > /dev/null 2>&1 || {
    echo "SKIP: $root is not a git checkout"
    exit 77
}
self=tests/tools/test_words.sh
hits=$( (git -C "$root" grep -n -I -i -w -e session -e sessions -e lent -- . ":!$self"
         git -C "$root" grep -n -I -i -E -e "seed's" -e "seeds'([^,]|$)" -- . ":!$self") |
       sort -u)
if [ -n "$hits" ]; then
    echo "FAIL: words the repository does not use (say \"the original trainer\" where"
    echo "origin matters; nothing of how it was made):"
    echo "$hits"
    exit 1
fi
echo "words: none of session, lent, seed's, seeds' in the tracked files"
