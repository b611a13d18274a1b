#!/usr/bin/env bash
# The C++ SDK is usable from outside this tree, both ways docs/sdk.md documents:
#  1. `make install` (tools/install_sdk.sh) + pkg-config, with a plain g++ command line;
#  2. another Bazel workspace that names coach as a local_repository.
# Each builds and runs sdk/cpp/examples/list_jobs.cc.
set -euo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init sdk_consumers
repo=$PWD
work=$(mktemp -d)
suite_on_exit rm -rf "$work"

suite_case "make install + pkg-config"
sdk_bin=$(suite_runfiles) || exit 1
COACH_SDK_BIN=$sdk_bin tools/install_sdk.sh "$work/prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log"; fail "tools/install_sdk.sh"; }
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046  # pkg-config's flags, split into words on purpose
g++ -Wall -Wextra -Werror sdk/cpp/examples/list_jobs.cc $(pkg-config --cflags --libs coach-sdk) \
  -o "$work/list_jobs_pkgconfig" || fail "g++ with pkg-config's flags"
"$work/list_jobs_pkgconfig" 127.0.0.1:1 | tee "$work/out1"
grep -q "built from-sdk" "$work/out1" || fail "list_jobs (pkg-config build) printed no 'built from-sdk'"

suite_case "another Bazel workspace"
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
# A Bazel of its own (its own output base, which outlives this run so a second run is quick):
# the Bazel running this suite holds the lock of this tree's.
output_base="${HOME}/.cache/coach/bazel-sdk-consumer"
suite_on_exit bash -c "cd '$work/consumer' && bazel --output_base='$output_base' shutdown >/dev/null 2>&1"
(cd "$work/consumer" && bazel --output_base="$output_base" build //:list_jobs >"$work/bazel.log" 2>&1) \
  || { tail -40 "$work/bazel.log"; fail "bazel build in the consumer workspace"; }
"$work/consumer/bazel-bin/list_jobs" 127.0.0.1:1 | tee "$work/out2"
grep -q "built from-sdk" "$work/out2" || fail "list_jobs (Bazel build) printed no 'built from-sdk'"
