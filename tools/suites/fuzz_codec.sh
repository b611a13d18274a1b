#!/usr/bin/env bash
# Builds the manifest-codec fuzzer with clang (libFuzzer + ASan + UBSan) against the
# system libraries, outside Bazel, and runs it seeded with api/v1/testdata and the corpus kept
# in the tree (api/v1/codec/fuzz/corpus). Exits non-zero when the build fails or the fuzzer
# finds a crash.
#
#   tools/suites/fuzz_codec.sh                       # make test: 20 seconds (--full: 300)
#   FUZZ_RUNS=10000000 FUZZ_FAST=1 FUZZ_MERGE=1 tools/suites/fuzz_codec.sh   # the long mode
#   FUZZ_SECONDS=600 FUZZ_MERGE=1 tools/suites/fuzz_codec.sh
#
# Then the adversarial target (alias bombs and other expansions) for FUZZ_ADVERSARIAL_SECONDS
# (10; --full: 120) or FUZZ_RUNS executions, with libFuzzer's -rss_limit_mb=256 and -malloc_limit_mb=256.
#
# FUZZ_FAST=1 explores without sanitizers (several times faster) and then replays every input
# it kept under ASan/UBSan. FUZZ_MERGE=1 merges what the run found into api/v1/codec/fuzz/corpus (libFuzzer's -merge keeps
# only inputs that add coverage), so the next run starts where this one stopped.
set -euo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init fuzz_codec
default_seconds=20 default_adversarial_seconds=10
if suite_full; then default_seconds=300 default_adversarial_seconds=120; fi
seconds="${FUZZ_SECONDS:-$default_seconds}"
runs="${FUZZ_RUNS:-}"
kept_corpus=api/v1/codec/fuzz/corpus
work="$(mktemp -d)"
[[ -n "${FUZZ_KEEP:-}" ]] || suite_on_exit rm -rf "$work"

suite_case "codec fuzzer"
mkdir -p "$work/gen" "$work/corpus"
protoc -I. -I/usr/include --cpp_out="$work/gen" api/v1/training_job.proto

# Link flags, one word each (pkg-config prints them on one line, separated by blanks).
read -ra absl_libs <<<"$(pkg-config --libs absl_status absl_statusor absl_strings absl_str_format absl_cord 2>/dev/null || true)"
if ((${#absl_libs[@]} == 0)); then
  absl_libs=(-labsl_statusor -labsl_status -labsl_cord -labsl_cordz_info -labsl_cord_internal -labsl_cordz_functions -labsl_cordz_handle -labsl_str_format_internal -labsl_strings -labsl_strings_internal -labsl_int128 -labsl_throw_delegate -labsl_base -labsl_raw_logging_internal -labsl_spinlock_wait)
fi
read -ra protobuf_libs <<<"$(pkg-config --libs protobuf)"

# Every library source of the codec (it is split in files by job), no tests.
codec_srcs=()
for f in api/v1/codec/*.cc; do [[ $f == *_test.cc ]] || codec_srcs+=("$f"); done

# The number of entries in a folder (its files' names are libFuzzer's hashes or testdata's).
entries() { find "$1" -mindepth 1 -maxdepth 1 ! -name '.*' | wc -l; }

# Fuzzers are kept under ~/.cache/coach/fuzz by what they are built from (the sources of api/v1
# and common, the flags, the compiler), so a run on an unchanged tree builds none. A build
# compiles its sources two at a time, then links.
fuzz_cache=$HOME/.cache/coach/fuzz
mkdir -p "$fuzz_cache"
sources_digest=$( {
  clang++-14 --version
  find api/v1 common -type f \( -name '*.h' -o -name '*.cc' -o -name '*.proto' \) ! -name '*_test.cc' |
    LC_ALL=C sort | xargs sha256sum
} | sha256sum | cut -c1-16)
build_fuzzer() {  # build_fuzzer OUTPUT CLANG-FLAGS...   (FUZZ_TARGET: the target's source)
  local out=$1
  shift
  local target=${FUZZ_TARGET:-api/v1/codec/fuzz/codec_fuzzer.cc} key cached objects
  key=$(printf '%s\n' "$sources_digest" "$target" "$@" | sha256sum | cut -c1-16)
  cached=$fuzz_cache/$(basename "$target" .cc)-$key
  if [[ -x $cached ]]; then
    cp "$cached" "$out"
    say "$(basename "$target" .cc) ($*): built before, $cached"
    return
  fi
  objects=$work/obj-$key
  mkdir -p "$objects"
  # shellcheck disable=SC2016  # $0, $1 and $@ are the inner sh's: a source, the folder, the flags
  printf '%s\n' "$target" "${codec_srcs[@]}" api/v1/kinds.cc api/v1/field_error.cc api/v1/defaults.cc \
    api/v1/validation.cc api/v1/pod_template.cc "$work/gen/api/v1/training_job.pb.cc" |
    xargs -P 2 -I{} sh -c 'src=$0 dir=$1; shift; exec clang++-14 -std=c++17 "$@" -c "$src" -o "$dir/$(echo "$src" | tr / _).o"' \
      {} "$objects" "$@" -Wno-deprecated-declarations -I. -I"$work/gen" ||
    fail "compiling $(basename "$target" .cc) ($*)"
  clang++-14 "$@" "$objects"/*.o -lyaml "${protobuf_libs[@]}" "${absl_libs[@]}" -lpthread -o "$out" ||
    fail "linking $(basename "$target" .cc)"
  cp "$out" "$cached.tmp.$$" && mv "$cached.tmp.$$" "$cached"
  # Only the latest few: each is tens of MiB.
  find "$fuzz_cache" -type f -mtime +7 -delete 2>/dev/null || true
}
# shellcheck disable=SC2054  # the commas are clang's: one -fsanitize= flag with three sanitizers
sanitized=(-O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
if [[ "${FUZZ_FAST:-}" == 1 ]]; then
  # The long mode's speed: no sanitizers while exploring (crashes and the fuzzer's own checks
  # still abort), then every input it kept is replayed under ASan and UBSan below.
  build_fuzzer "$work/codec_fuzzer" -O2 -g -fsanitize=fuzzer
else
  build_fuzzer "$work/codec_fuzzer" "${sanitized[@]}"
fi

find api/v1/testdata -name '*.yaml' -exec cp {} "$work/corpus/" \;
if [[ -d "$kept_corpus" ]]; then cp "$kept_corpus"/* "$work/corpus/" 2>/dev/null || true; fi
limit=(-max_total_time="$seconds")
[[ -n "$runs" ]] && limit=(-runs="$runs")
# A stack big enough for the parser's own depth guard under ASan.
ulimit -s 65536 || true
status=0
"$work/codec_fuzzer" "${limit[@]}" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/" "$work/corpus" >"$work/fuzz.log" 2>&1 || status=$?
# The fuzzer's own report (what failed and why), without its progress lines.
grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED|DONE|RELOAD)' "$work/fuzz.log" >"$work/report.log" || true
head -n 80 "$work/report.log"
if ((status != 0)); then
  for crash in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
    [[ -e "$crash" ]] || continue
    echo "== reproducer $crash (base64):"
    base64 "$crash" | head -c 4000
    echo
  done
  fail "the fuzzer failed (status $status)"
fi
if [[ "${FUZZ_FAST:-}" == 1 ]]; then
  build_fuzzer "$work/codec_fuzzer_asan" "${sanitized[@]}"
  replayed=$(entries "$work/corpus")
  if ! "$work/codec_fuzzer_asan" -runs=0 -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix="$work/" "$work/corpus" >"$work/replay.log" 2>&1; then
    tail -n 60 "$work/replay.log"
    fail "an input the fast run kept fails under ASan/UBSan"
  fi
  say "the ${replayed} inputs of the corpus replayed under ASan/UBSan without a finding"
fi
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log")
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log")
if [[ "${FUZZ_MERGE:-}" == 1 ]]; then
  mkdir -p "$kept_corpus"
  "$work/codec_fuzzer" -merge=1 -max_len=16384 "$kept_corpus" "$work/corpus" >"$work/merge.log" 2>&1
  say "corpus in $kept_corpus: $(entries "$kept_corpus") inputs"
fi
say "no crash in ${execs:-?} executions (${rate:-?}/s)"

# The adversarial target (api/v1/codec/fuzz/adversarial_fuzzer.cc): generated alias bombs,
# nesting and large scalars, under the memory the operator is meant to stay within. Built
# without sanitizers, whose own memory would hide the decoder's; its corpus is replayed under
# ASan/UBSan after. Peak RSS is the fuzzer's own report.
suite_case "adversarial fuzzer"
adv_seconds="${FUZZ_ADVERSARIAL_SECONDS:-$default_adversarial_seconds}"
adv_limit=(-max_total_time="$adv_seconds")
[[ -n "$runs" ]] && adv_limit=(-runs="$runs")
mkdir -p "$work/adv-corpus"
# Seeds that the generator turns into bombs at once (see its Value()): a 64 KiB anchor, then
# levels of 16 aliases each to the previous level, in labels, annotations, env and args.
python3 - "$work/adv-corpus" <<'PY'
import sys
def bomb(levels, docs=0):
    b = bytes([docs, 0, 16])           # documents; labels: a0 = 64 KiB scalar
    for n in range(1, levels + 1):     # each level: [*a(n-1) x 16] as anchor a(n)
        b += bytes([1, 15]) + bytes([n - 1]) * 16
    return b
for i, levels in enumerate((1, 2, 3, 5, 8)):
    open("%s/seed-bomb-%d" % (sys.argv[1], i), "wb").write(bomb(levels, docs=i % 4))
PY
FUZZ_TARGET=api/v1/codec/fuzz/adversarial_fuzzer.cc build_fuzzer "$work/adversarial_fuzzer" -O2 -g \
  -fsanitize=fuzzer
adv_status=0
"$work/adversarial_fuzzer" "${adv_limit[@]}" -max_len=4096 -timeout=10 -rss_limit_mb=256 \
  -malloc_limit_mb=256 -print_final_stats=1 -artifact_prefix="$work/adv-" "$work/adv-corpus" \
  >"$work/adv.log" 2>&1 || adv_status=$?
if ((adv_status != 0)); then
  grep -v -E '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse|INITED|DONE|RELOAD)' "$work/adv.log" | head -n 60
  for crash in "$work"/adv-*; do
    [[ -f "$crash" ]] || continue
    echo "== reproducer $crash (base64):"
    base64 "$crash" | head -c 4000
    echo
  done
  fail "the adversarial fuzzer failed (status $adv_status)"
fi
FUZZ_TARGET=api/v1/codec/fuzz/adversarial_fuzzer.cc build_fuzzer "$work/adversarial_fuzzer_asan" \
  "${sanitized[@]}"
if ! "$work/adversarial_fuzzer_asan" -runs=0 -max_len=4096 -timeout=30 -rss_limit_mb=4096 \
    -artifact_prefix="$work/adv-" "$work/adv-corpus" >"$work/adv-replay.log" 2>&1; then
  tail -n 60 "$work/adv-replay.log"
  fail "an adversarial input fails under ASan/UBSan"
fi
adv_execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/adv.log")
adv_rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/adv.log")
adv_rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$work/adv.log")
say "adversarial: no crash and no input over 256 MiB in ${adv_execs:-?} executions" \
  "(${adv_rate:-?}/s), peak RSS ${adv_rss:-?} MiB; $(entries "$work/adv-corpus") inputs replayed under ASan/UBSan"
