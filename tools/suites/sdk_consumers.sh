#!/usr/bin/env bash
# The C++ SDK is usable from outside this tree, both ways docs/sdk.md documents:
#  1. `make install` (tools/install_sdk.sh) + pkg-config, with a plain g++ command line;
#  2. another Bazel workspace that names coach as a local_repository.
# Each builds and runs sdk/cpp/examples/list_jobs.cc.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

echo "sdk_consumers: make install + pkg-config"
tools/install_sdk.sh "$work/prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046  # pkg-config's flags, split into words on purpose
g++ -Wall -Wextra -Werror sdk/cpp/examples/list_jobs.cc $(pkg-config --cflags --libs coach-sdk) \
  -o "$work/list_jobs_pkgconfig"
"$work/list_jobs_pkgconfig" 127.0.0.1:1 | tee "$work/out1"
grep -q "built from-sdk" "$work/out1"

echo "sdk_consumers: another Bazel workspace"
mkdir -p "$work/consumer"
cp sdk/cpp/examples/list_jobs.cc "$work/consumer/"
cat >"$work/consumer/WORKSPACE" <<WS
workspace(name = "consumer")
local_repository(name = "coach", path = "$repo")
load("@coach//tools/bazel:deps.bzl", "coach_dependencies")
coach_dependencies()
WS
cat >"$work/consumer/BUILD.bazel" <<'BUILD'
cc_binary(
    name = "list_jobs",
    srcs = ["list_jobs.cc"],
    deps = [
        "@coach//sdk/cpp:job_builder",
        "@coach//sdk/cpp:training_client",
    ],
)
BUILD
cp .bazelrc "$work/consumer/.bazelrc"
# A cache folder of its own that outlives this run, so a second run is quick.
output_base="${HOME}/.cache/coach/bazel-sdk-consumer"
(cd "$work/consumer" && bazel --output_base="$output_base" build //:list_jobs >"$work/bazel.log" 2>&1) \
  || { tail -40 "$work/bazel.log"; exit 1; }
"$work/consumer/bazel-bin/list_jobs" 127.0.0.1:1 | tee "$work/out2"
grep -q "built from-sdk" "$work/out2"
(cd "$work/consumer" && bazel --output_base="$output_base" shutdown >/dev/null 2>&1) || true
echo "sdk_consumers: PASS"
