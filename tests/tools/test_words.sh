#!/bin/bash
# scripts: the repository speaks of itself only. No tracked file names the
# way it was made, or the trainer it came from by the possessive of its
# nickname: where origin matters, it is "the original trainer". The
# patterns below use character classes, so that this file does not hold
# the words itself. Random seeds (`make_entry_seeds`, "the seed is
# printed") are not matched. Needs git and the checkout (skipped, 77, in a
# source tarball).
# Usage: test_words.sh SOURCE_ROOT
root=${1:?usage: test_words.sh SOURCE_ROOT}
command -v git > /dev/null && git -C "$root" rev-parse --git-dir > /dev/null 2>&1 || {
    echo "SKIP: $root is not a git checkout"
    exit 77
}
hits=$( (git -C "$root" grep -n -I -i -w -E -e "s[e]ssions?" -e "l[e]nt" -- .
         git -C "$root" grep -n -I -i -E -e "s[e]ed's" -e "s[e]eds'([^,]|$)" -- .) |
       sort -u)
if [ -n "$hits" ]; then
    echo "FAIL: words the repository does not use (say \"the original trainer\" where"
    echo "origin matters; nothing of how it was made):"
    echo "$hits"
    exit 1
fi
echo "words: none in the tracked files"
