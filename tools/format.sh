#!/usr/bin/env bash
# Formats the tree the way tools/suites/lint.sh checks it: clang-format -i (.clang-format) over
# every tracked .h/.cc, and buildifier (tools/buildifier.sh, pinned) over BUILD.bazel,
# WORKSPACE and *.bzl files. Arguments, when given, limit it to those files.
set -euo pipefail
cd "$(dirname "$0")/.."

if (($# > 0)); then
  files=("$@")
else
  mapfile -t files < <(git ls-files --cached --others --exclude-standard |
    while read -r f; do [[ -f $f ]] && echo "$f"; done)
fi
cc=()
build=()
for f in "${files[@]}"; do
  case "$f" in
    *.h | *.cc) cc+=("$f") ;;
    BUILD | */BUILD | BUILD.bazel | */BUILD.bazel | WORKSPACE | */WORKSPACE | *.bzl) build+=("$f") ;;
  esac
done

if ((${#cc[@]} > 0)); then
  printf '%s\0' "${cc[@]}" | xargs -0 -n 50 clang-format --style=file -i
fi
if ((${#build[@]} > 0)); then
  buildifier=$(tools/buildifier.sh)
  "$buildifier" -lint=off "${build[@]}"
fi
echo "format: ${#cc[@]} C++ file(s), ${#build[@]} BUILD file(s)"
