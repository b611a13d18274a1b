#!/usr/bin/env bash
# Installs the coach C++ SDK into PREFIX: one static library (libcoach_sdk.a, every SDK
# target and the generated API code merged), the headers under include/{sdk/cpp,api/v1},
# and lib/pkgconfig/coach-sdk.pc. Then `pkg-config --cflags --libs coach-sdk` builds a client.
#
#   tools/install_sdk.sh PREFIX        (or PREFIX=... tools/install_sdk.sh)
#   COACH_SKIP_BUILD=1                 use what bazel-bin already holds
#   COACH_SDK_BIN=DIR                  use the archives and generated headers under DIR (laid out
#                                      as bazel-bin is; //sdk/cpp:install_files), no Bazel run
#   DESTDIR=...                        staged install, as with make
set -euo pipefail

cd "$(dirname "$0")/.."
prefix="${1:-${PREFIX:-}}"
if [[ -z "$prefix" ]]; then
  echo "usage: $0 PREFIX (or PREFIX=... $0)" >&2
  exit 2
fi
version=$(tr -d '[:space:]' <VERSION)  # the one version of coach

targets=(//sdk/cpp:training_client //sdk/cpp:connection //sdk/cpp:grpc_status //sdk/cpp:job_status
  //sdk/cpp:job_builder //api/v1:kinds //api/v1:training_service_proto //api/v1:training_job_proto)
archives=(
  sdk/cpp/libtraining_client.a
  sdk/cpp/libconnection.a
  sdk/cpp/libgrpc_status.a
  sdk/cpp/libjob_status.a
  sdk/cpp/libjob_builder.a
  api/v1/libkinds.a
  api/v1/libtraining_service_proto.a
  api/v1/libtraining_job_proto.a
)
if [[ -n "${COACH_SDK_BIN:-}" ]]; then
  bin=$COACH_SDK_BIN
else
  if [[ "${COACH_SKIP_BUILD:-0}" != 1 ]]; then
    bazel build "${targets[@]}" >&2
  fi
  bin="$(bazel info bazel-bin 2>/dev/null || echo bazel-bin)"
fi
for archive in "${archives[@]}"; do
  [[ -f "$bin/$archive" ]] || { echo "$0: missing $bin/$archive (build first)" >&2; exit 1; }
done

root="${DESTDIR:-}$prefix"
install -d "$root/lib/pkgconfig" "$root/include/sdk/cpp" "$root/include/api/v1"

# One archive, so users link -lcoach_sdk without knowing the Bazel targets. An MRI script
# merges archives without unpacking their members (which may share file names).
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
{
  echo "CREATE $work/libcoach_sdk.a"
  for archive in "${archives[@]}"; do echo "ADDLIB $bin/$archive"; done
  echo "SAVE"
  echo "END"
} | ar -M
ranlib "$work/libcoach_sdk.a"
install -m 0644 "$work/libcoach_sdk.a" "$root/lib/libcoach_sdk.a"

for header in sdk/cpp/*.h; do install -m 0644 "$header" "$root/include/sdk/cpp/"; done
for header in "$bin"/api/v1/*.pb.h api/v1/kinds.h; do
  install -m 0644 "$header" "$root/include/api/v1/"
done

sed -e "s|@PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" sdk/cpp/coach-sdk.pc.in \
  > "$root/lib/pkgconfig/coach-sdk.pc"
echo "installed coach-sdk $version into $root" >&2
