#!/usr/bin/env bash
# A current PyTorch (PyPI's torch 2.15, whose `torchrun` works here; Debian's 1.13 cannot start its
# workers) for the tests and examples that run jobs started by the real torchrun: a virtualenv from
# /usr/bin/python3 (3.11), WITHOUT system site packages (Debian's torch 1.13 stays out of it), holding
# exactly the wheels pinned with hashes in tools/torch-requirements.txt.
#
#   tools/torch_env.sh install    idempotent: create the venv and install the pins; prints its python
#   tools/torch_env.sh python     print the venv's python (exit 1 when not installed; waits for an
#                                 install in progress)
#   tools/torch_env.sh bin        print the venv's bin directory (torchrun, python)
#   tools/torch_env.sh version    print the pinned torch version
#   tools/torch_env.sh wheels     download the pinned wheels (hash-checked) once; print their directory
#                                 (the venv and the training image's PyTorch layer install from it)
#   tools/torch_env.sh --lock     re-resolve tools/torch-requirements.txt from the pins below (pip's
#                                 resolver in a scratch venv; downloads metadata only)
#
# The venv: ${COACH_TORCH_VENV:-$HOME/.cache/coach/torch-venv-<key>}, where <key> is the sha256 of
# the requirements file, the install steps' format and the Python version, so a changed pin makes a
# new venv (and `install` then removes the others: 5.4 GiB each). A venv counts as installed once its
# marker file (.coach-installed, holding the key) exists, written after torch imported; an
# interrupted install is removed and made again. One install at a time (a lock under
# ~/.cache/coach), so tools/run_tests' background install and a test asking for the venv wait for
# each other. The wheels: $HOME/.cache/coach/torch-wheels-<sha256 of the requirements>, complete once its
# marker .coach-complete exists, downloaded under a lock of their own (tools/image/build-training
# reads them too); install removes the directories of other requirements.
#
# PyPI serves no CPU-only torch for Linux (those builds are on download.pytorch.org, out of reach
# here): the default build pulls the CUDA libraries it loads at import, 3.0 GB of wheels in all. It
# runs on CPU; the same venv drives GPUs where they exist.
set -euo pipefail
# Through a link too (the tests reach this script from their runfiles): the tree it belongs to.
cd "$(dirname "$(readlink -f "$0")")/.."

TORCH_VERSION=2.15.0
NUMPY_VERSION=2.4.6
REQUIREMENTS=tools/torch-requirements.txt
PYTHON=/usr/bin/python3
CACHE="${HOME:?HOME must be set}/.cache/coach"

log() { echo "torch_env: $*" >&2; }
die() { echo "torch_env: $*" >&2; exit 1; }

# Bump the format when cmd_install installs differently.
key() {
  {
    echo "format 1"
    "$PYTHON" -c 'import sys; print(sys.version)'
    sha256sum <"$REQUIREMENTS"
  } | sha256sum | cut -c1-16
}

# The venv's key, path and marker (not for --lock, which may run before the requirements exist).
venv_paths() {
  [[ -f "$REQUIREMENTS" ]] || die "$REQUIREMENTS is missing: run $0 --lock"
  KEY=$(key)
  VENV="${COACH_TORCH_VENV:-$CACHE/torch-venv-$KEY}"
  MARKER="$VENV/.coach-installed"
}

# remove_others PREFIX KEEP WHY: removes the directories PREFIX* but KEEP (5.4 GiB venvs, 2.9 GB of
# wheels: the cache keeps only the current ones).
remove_others() {
  local old
  for old in "$1"*; do
    [[ -d "$old" && "$old" != "$2" ]] || continue
    log "removing $old ($3)"
    rm -rf --one-file-system "$old"
  done
}

# The pinned wheels, downloaded once (pip download checks every hash); prints their directory.
cmd_wheels() {
  local dir
  dir="$CACHE/torch-wheels-$(sha256sum <"$REQUIREMENTS" | cut -c1-16)"
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.torch-wheels.lock"
  flock 8
  if [[ ! -f "$dir/.coach-complete" ]]; then
    log "downloading the wheels of $REQUIREMENTS into $dir"
    local start=$SECONDS
    mkdir -p "$dir"
    nice "$PYTHON" -m pip download -q --disable-pip-version-check --no-cache-dir --require-hashes \
      --only-binary=:all: --no-deps -r "$REQUIREMENTS" -d "$dir" >&2
    touch "$dir/.coach-complete"
    log "downloaded in $((SECONDS - start)) s: $(du -sh "$dir" | cut -f1)"
    remove_others "$CACHE/torch-wheels-" "$dir" "other requirements"
  fi
  exec 8>&-
  echo "$dir"
}

installed() { [[ -x "$VENV/bin/python" && -f "$MARKER" && "$(cat "$MARKER")" == "$KEY" ]]; }

cmd_install() {
  if installed; then echo "$VENV/bin/python"; return 0; fi
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.torch-venv.lock"
  flock 9
  if installed; then echo "$VENV/bin/python"; return 0; fi  # installed while we waited
  "$PYTHON" -m venv -h >/dev/null 2>&1 || die "$PYTHON has no venv module (apt-get install python3-venv)"
  log "installing torch==$TORCH_VERSION ($REQUIREMENTS) into $VENV"
  # An interrupted install is made again; anything but a venv is left alone.
  if [[ -e "$VENV" ]]; then
    [[ -f "$VENV/pyvenv.cfg" ]] || die "$VENV exists and is not a venv; remove it or set COACH_TORCH_VENV"
    rm -rf --one-file-system "$VENV"
  fi
  "$PYTHON" -m venv "$VENV"
  local start=$SECONDS
  # Hash-checked wheels only, from the shared download; --no-deps, since the file pins the whole
  # closure. No pip cache: it would keep a third copy of the 3.0 GB of wheels.
  local wheels
  wheels=$(cmd_wheels)
  nice "$VENV/bin/python" -m pip install -q --disable-pip-version-check --no-cache-dir \
    --require-hashes --only-binary=:all: --no-deps --no-index --find-links "$wheels" \
    -r "$REQUIREMENTS" >&2
  "$VENV/bin/python" - "$TORCH_VERSION" <<'PY' >&2
import sys
import numpy, torch, torch.distributed as dist
want = sys.argv[1]
if torch.__version__.split("+")[0] != want:
    sys.exit(f"torch_env: torch {torch.__version__} imported, want {want}")
if not dist.is_available() or not dist.is_gloo_available():
    sys.exit("torch_env: torch.distributed with gloo is not available")
PY
  [[ -x "$VENV/bin/torchrun" ]] || die "no torchrun in $VENV/bin"
  echo "$KEY" >"$MARKER"
  log "installed in $((SECONDS - start)) s: $(du -sh "$VENV" | cut -f1)"
  if [[ -z "${COACH_TORCH_VENV:-}" ]]; then remove_others "$CACHE/torch-venv-" "$VENV" "another key"; fi
  echo "$VENV/bin/python"
}

cmd_python() {
  if ! installed && [[ -f "$CACHE/.torch-venv.lock" ]]; then
    exec 9<"$CACHE/.torch-venv.lock"
    flock -s 9  # an install in progress (tools/run_tests starts one beside the compiles)
  fi
  installed || { log "not installed in $VENV; run tools/torch_env.sh install"; exit 1; }
  echo "$VENV/bin/python"
}

cmd_lock() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/coach-torch-lock.XXXXXX")
  trap 'rm -rf "$work"' EXIT  # work: global, as the trap runs after this function returned
  "$PYTHON" -m venv "$work/venv"
  log "resolving torch==$TORCH_VERSION numpy==$NUMPY_VERSION"
  "$work/venv/bin/python" -m pip install -q --disable-pip-version-check --dry-run \
    --only-binary=:all: --report "$work/report.json" \
    "torch==$TORCH_VERSION" "numpy==$NUMPY_VERSION" >&2
  "$PYTHON" - "$work/report.json" "$REQUIREMENTS" "$TORCH_VERSION" "$NUMPY_VERSION" <<'PY'
import json, sys
report, out, torch_version, numpy_version = sys.argv[1:]
lines = []
for item in json.load(open(report))["install"]:
    meta = item["metadata"]
    hashes = item["download_info"].get("archive_info", {}).get("hashes") or {}
    if "sha256" not in hashes:
        sys.exit(f"{meta['name']}: no sha256 in pip's report")
    lines.append(f"{meta['name']}=={meta['version']} --hash=sha256:{hashes['sha256']}")
with open(out, "w") as f:
    f.write(f"# torch=={torch_version} and numpy=={numpy_version} with everything they need, for\n"
            "# /usr/bin/python3 (3.11, Linux x86_64), as pip resolved it (tools/torch_env.sh --lock).\n"
            "# Wheels only, hash-checked.\n")
    for line in sorted(lines, key=str.lower):
        f.write(line + "\n")
print(f"torch_env: wrote {out} ({len(lines)} packages)", file=sys.stderr)
PY
}

case "${1:-}" in
  install) venv_paths; cmd_install ;;
  python) venv_paths; cmd_python ;;
  bin) venv_paths; cmd_python >/dev/null; echo "$VENV/bin" ;;
  version) echo "$TORCH_VERSION" ;;
  wheels) venv_paths; cmd_wheels ;;
  lock | --lock) cmd_lock ;;
  *) sed -n '2,/^[^#]/{/^#/p}' "$0" >&2; exit 2 ;;
esac
