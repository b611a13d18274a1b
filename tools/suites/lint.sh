#!/usr/bin/env bash
# The tree's static checks; each prints what it refused, and the suite fails when any does:
#  1. time source: production code reads the time only through coach::Clock (common/clock.h),
#     so tests can inject a FakeClock and no deadline depends on which clock a file read.
#     Refused: absl::Now(, absl::GetCurrentTimeNanos, std::chrono::<clock>::now(,
#     time(nullptr), gettimeofday, clock_gettime, outside TIME_ALLOWED below;
#  2. header guards: every .h says `#pragma once` and has no #ifndef/#define guard;
#  3. buildifier (tools/buildifier.sh builds it from its Go module at a pinned version) in
#     check mode over BUILD.bazel, WORKSPACE and *.bzl files;
#  4. clang-format (.clang-format) in --dry-run --Werror mode over every .h and .cc;
#  5. documentation links: every relative link of README.md and docs/*.md names a file that
#     exists and, with an #anchor, a heading of that file (tools/check_doc_links.py);
#  6. shellcheck over every shell script: *.sh, *.bash, and any other file whose first line is a
#     sh or bash shebang (tools/run_tests, tools/testenv/testenv, .ci/run, ...).
# Fix 3 and 4 with tools/format.sh. Outside CI a missing go, clang-format or shellcheck skips its
# check; under CI=true that fails. Each check is one case of the suite's report.
set -uo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init lint

missing_tool() {  # why
  if [[ ${CI:-} == true ]]; then
    suite_case_failed "$1"
  else
    say "SKIP $SUITE_CASE: $1"
  fi
}

# Tracked files and new ones not yet added (but not ignored), so a check sees work in progress.
mapfile -t cc_files < <(git ls-files --cached --others --exclude-standard -- '*.h' '*.cc' |
  sort -u | while read -r f; do [[ -f $f ]] && echo "$f"; done)
mapfile -t headers < <(printf '%s\n' "${cc_files[@]}" | grep '\.h$')
mapfile -t build_files < <(git ls-files --cached --others --exclude-standard |
  grep -E '(^|/)(BUILD(\.bazel)?|WORKSPACE(\.bazel)?|MODULE\.bazel|[^/]*\.bzl)$' | sort -u |
  while read -r f; do [[ -f $f ]] && echo "$f"; done)
# A symlink is checked where it points (integrations/mlflow/testdata/mlflow_env.sh).
mapfile -t shell_files < <(git ls-files --cached --others --exclude-standard | sort -u |
  while read -r f; do
    [[ -f $f && ! -L $f ]] || continue
    if [[ $f == *.sh || $f == *.bash ]]; then
      echo "$f"
    else
      first=""
      IFS= read -r first <"$f" 2>/dev/null
      [[ $first =~ ^'#!'(/usr/bin/env[[:space:]]+|/bin/|/usr/bin/)(ba)?sh([[:space:]]|$) ]] && echo "$f"
    fi
  done)

# --- 1. time source ----------------------------------------------------------------------
suite_case time-source
# The one allowlist of the time-source rule: bash globs (`*` matches across '/'), each with
# why it may read the system's clock directly.
TIME_ALLOWED=(
  # The clock itself: the only production read of the system's time.
  "common/clock.cc"
  # Tests and their fixtures wait for real processes, servers and threads in real time, and
  # measure how long something took; the code under test still gets the clock injected.
  "*_test.cc"
  "*/testing/*"
  "tools/smoke/*"
  # End-to-end suites and benchmarks: harnesses around real binaries, timing real work.
  "e2e/*"
  "bench/*"
  # The SDK's client-side deadlines (gRPC deadlines and WaitForJobConditions' budget): the SDK
  # is installed on its own (tools/install_sdk.sh ships sdk/cpp, not common/), and a Clock in
  # its API would be an API change of its own.
  "sdk/cpp/training_client.cc"
)
time_allowed() {
  local f=$1 pattern
  for pattern in "${TIME_ALLOWED[@]}"; do
    # shellcheck disable=SC2053  # the right side is a glob on purpose
    [[ $f == $pattern ]] && return 0
  done
  return 1
}
time_files=()
for f in "${cc_files[@]}"; do time_allowed "$f" || time_files+=("$f"); done
# Code only: a `//` comment may name what it refuses (as this rule's own comments do).
time_hits=$(awk '
  { line = $0; sub(/\/\/.*/, "", line) }
  line ~ /absl::Now[(]|absl::GetCurrentTimeNanos|std::chrono::[a-z_]+::now[(]|(^|[^a-z_:.>])time[(](nullptr|NULL|0)[)]|gettimeofday|clock_gettime/ {
    printf "%s:%d: %s\n", FILENAME, FNR, $0
  }' "${time_files[@]}")
if [[ -n $time_hits ]]; then
  echo "$time_hits" >&2
  suite_case_failed "$(wc -l <<<"$time_hits") direct read(s) of the system clock above: take a coach::Clock* (common/clock.h) instead, or add the file to TIME_ALLOWED in tools/suites/lint.sh with why"
else
  say "time-source: ${#time_files[@]} files read time only through coach::Clock"
fi

# --- 2. header guards --------------------------------------------------------------------
suite_case header-guards
guard_bad=()
for h in "${headers[@]}"; do
  if ! grep -q '^#pragma once' "$h" || grep -qE '^#ifndef [A-Z0-9_]+_H_?$' "$h"; then
    guard_bad+=("$h")
  fi
done
if ((${#guard_bad[@]} > 0)); then
  printf '  %s\n' "${guard_bad[@]}" >&2
  suite_case_failed "${#guard_bad[@]} header(s) above lack #pragma once or keep an #ifndef guard"
else
  say "header-guards: ${#headers[@]} headers use #pragma once"
fi

# --- 3. buildifier -----------------------------------------------------------------------
suite_case buildifier
if ! command -v go >/dev/null 2>&1 && ! ls "$HOME"/.cache/coach/tools/buildifier-*/buildifier >/dev/null 2>&1; then
  missing_tool "go is not installed (tools/buildifier.sh builds buildifier with it)"
elif ! buildifier=$(tools/buildifier.sh); then
  suite_case_failed "tools/buildifier.sh could not provide buildifier (see above)"
else
  # Exit 4: some file needs reformatting (listed on stdout); other non-zero: a parse error.
  out=$("$buildifier" -mode=check -lint=off "${build_files[@]}" 2>&1)
  rc=$?
  if ((rc != 0)); then
    echo "$out" >&2
    suite_case_failed "BUILD files above are not as buildifier writes them: run tools/format.sh"
  else
    say "buildifier: ${#build_files[@]} BUILD/WORKSPACE/.bzl files formatted"
  fi
fi

# --- 4. clang-format ---------------------------------------------------------------------
suite_case clang-format
if ! command -v clang-format >/dev/null 2>&1; then
  missing_tool "clang-format is not installed (tools/bootstrap installs it)"
else
  # One file per call so the failures can be named; two at a time for the 2-core machines.
  # shellcheck disable=SC2016  # "$1" is sh -c's argument (the file), not this script's
  mapfile -t format_bad < <(printf '%s\0' "${cc_files[@]}" | xargs -0 -P 2 -n 1 sh -c \
    'clang-format --style=file --dry-run --Werror "$1" >/dev/null 2>&1 || echo "$1"' sh | sort)
  if ((${#format_bad[@]} > 0)); then
    printf '  %s\n' "${format_bad[@]:0:30}" >&2
    ((${#format_bad[@]} > 30)) && echo "  ... and $((${#format_bad[@]} - 30)) more" >&2
    suite_case_failed "${#format_bad[@]} of ${#cc_files[@]} files are not as $(clang-format --version | sed 's/ version / /;s/^Debian //') formats them with .clang-format: run tools/format.sh"
  else
    say "clang-format: ${#cc_files[@]} files formatted"
  fi
fi

# --- 5. documentation links --------------------------------------------------------------
suite_case doc-links
if ! links_out=$(/usr/bin/python3 tools/check_doc_links.py 2>&1); then
  grep -v '^check_doc_links: ' <<<"$links_out" | sed 's/^/  /' >&2
  suite_case_failed "$(tail -1 <<<"$links_out" | sed 's/^check_doc_links: //'): fix the links above"
else
  say "doc-links: $(tail -1 <<<"$links_out" | sed 's/^check_doc_links: //')"
fi

# --- 6. shellcheck ----------------------------------------------------------------------
suite_case shellcheck
# At shellcheck's default severity, style and up, not just -S warning: the style notes it gave
# on this tree were each worth acting on (`A && B || C` taken for if-then-else, an unused loop
# variable, ls parsed to count files) or worth a line saying why not. A deliberate exception is
# disabled on the line above it, with its reason: `# shellcheck disable=SCxxxx  # why`.
# .shellcheckrc (at the root) has it follow `source`, so that tools/testenv/testenv and the
# realnode.bash it sources see each other's variables.
if ! command -v shellcheck >/dev/null 2>&1; then
  missing_tool "shellcheck is not installed (tools/bootstrap installs it)"
else
  out=$(shellcheck --format=gcc "${shell_files[@]}" 2>&1)
  rc=$?
  if ((rc != 0)); then
    echo "$out" >&2
    suite_case_failed "$(grep -cE ': (error|warning|note): ' <<<"$out") finding(s) above from shellcheck $(shellcheck --version | sed -n 's/^version: //p') in ${#shell_files[@]} shell scripts: fix them, or disable one on the line above it with why"
  else
    say "shellcheck: ${#shell_files[@]} shell scripts clean"
  fi
fi
