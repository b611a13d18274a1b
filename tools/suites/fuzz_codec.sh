#!/usr/bin/env bash
# Builds the manifest-codec fuzzer with clang (libFuzzer + ASan + UBSan) against the
# system libraries, outside Bazel, and runs it for 30 seconds seeded with api/v1/testdata.
# Exits non-zero when the build fails or the fuzzer finds a crash.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds="${FUZZ_SECONDS:-30}"
work="$(mktemp -d)"
trap '[[ -n "${FUZZ_KEEP:-}" ]] || rm -rf "$work"' EXIT

mkdir -p "$work/gen" "$work/corpus"
protoc -I. -I/usr/include --cpp_out="$work/gen" api/v1/training_job.proto

absl_libs=$(pkg-config --libs absl_status absl_statusor absl_strings absl_str_format absl_cord 2>/dev/null || true)
if [[ -z "$absl_libs" ]]; then
  absl_libs="-labsl_statusor -labsl_status -labsl_cord -labsl_cordz_info -labsl_cord_internal -labsl_cordz_functions -labsl_cordz_handle -labsl_str_format_internal -labsl_strings -labsl_strings_internal -labsl_int128 -labsl_throw_delegate -labsl_base -labsl_raw_logging_internal -labsl_spinlock_wait"
fi

# Every library source of the codec (it is split in files by job), no tests.
codec_srcs=()
for f in api/v1/codec/*.cc; do [[ $f == *_test.cc ]] || codec_srcs+=("$f"); done

clang++-14 -std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
  -Wno-deprecated-declarations -I. -I"$work/gen" \
  api/v1/codec/fuzz/codec_fuzzer.cc "${codec_srcs[@]}" \
  api/v1/kinds.cc api/v1/field_error.cc api/v1/defaults.cc api/v1/validation.cc \
  "$work/gen/api/v1/training_job.pb.cc" \
  -lyaml $(pkg-config --libs protobuf) $absl_libs -lpthread \
  -o "$work/codec_fuzzer"

find api/v1/testdata -name '*.yaml' -exec cp {} "$work/corpus/" \;
# A stack big enough for the parser's own depth guard under ASan.
ulimit -s 65536 || true
status=0
"$work/codec_fuzzer" -max_total_time="$seconds" -max_len=16384 -timeout=10 -rss_limit_mb=2048 \
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
  echo "fuzz_codec: the fuzzer failed (status $status)"
  exit 1
fi
echo "fuzz_codec: no crash in ${seconds}s"
