# Sourced by bench/launcher's scripts: sets torch_python and torch_bin to the torch venv's python
# and bin directory (tools/torch_env.sh), or exits saying how to install it; defines opt_bin.
# shellcheck shell=bash
# shellcheck disable=SC2034  # the sourcing script uses both
if ! torch_python="$(tools/torch_env.sh python 2>/dev/null)" ||
  ! torch_bin="$(tools/torch_env.sh bin 2>/dev/null)" || [[ ! -x "$torch_bin/torchrun" ]]; then
  echo "bench/launcher: no torch venv with torchrun (PyPI's torch $(tools/torch_env.sh version));" \
    "install it with: tools/torch_env.sh install" >&2
  exit 1
fi

# opt_bin TARGET...: builds the targets optimized (quietly; again with output when that fails) and
# prints the bazel-bin directory they are in.
opt_bin() {
  bazel build -c opt "$@" >/dev/null 2>&1 || bazel build -c opt "$@" >&2 || exit 1
  bazel info -c opt bazel-bin 2>/dev/null
}
