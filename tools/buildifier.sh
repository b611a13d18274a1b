#!/usr/bin/env bash
# Prints the path of a buildifier binary at the pinned version, building it from its Go module
# the first time (about a minute; the Go module proxy must be reachable then) and caching it
# under ~/.cache/coach/tools/buildifier-<version>/. Usage:
#   "$(tools/buildifier.sh)" -mode=check -lint=off BUILD.bazel ...
# Exits non-zero (and prints why on stderr) when it cannot provide the binary.
set -euo pipefail

# A pseudo-version: buildtools' release tags (v7, v8, ...) are not Go-module versions of
# github.com/bazelbuild/buildtools (no /vN suffix), so the proxy serves commits only.
# Bump it on purpose: a newer buildifier may format BUILD files differently.
readonly VERSION="v0.0.0-20260904073137-eaa4d125b423"
readonly XSYS_VERSION="v0.49.0"
readonly DIR="${HOME}/.cache/coach/tools/buildifier-${VERSION}"
readonly BIN="${DIR}/buildifier"

if [[ ! -x "${BIN}" ]]; then
  if ! command -v go >/dev/null 2>&1; then
    echo "buildifier.sh: go is not installed; cannot build buildifier ${VERSION}" >&2
    exit 1
  fi
  mkdir -p "${DIR}"
  echo "buildifier.sh: building buildifier ${VERSION} into ${DIR}" >&2
  # A throwaway module that requires buildifier and every module its build resolves at
  # fixed versions (buildtools' own go.mod leaves golang.org/x/sys, needed by
  # github.com/google/safeopen, unstated: without a pin the newest would be taken). A private
  # GOPATH keeps the build out of the user's module cache.
  tmp="$(mktemp -d)"
  trap 'chmod -R u+w "${tmp}" 2>/dev/null; rm -rf "${tmp}"' EXIT
  if ! (cd "${tmp}" && export GOPATH="${tmp}/gopath" GOFLAGS=-mod=mod &&
        go mod init coach.local/buildifier >/dev/null 2>&1 &&
        go get "github.com/bazelbuild/buildtools@${VERSION}" "golang.org/x/sys@${XSYS_VERSION}" &&
        go build -o "${tmp}/bin/buildifier" github.com/bazelbuild/buildtools/buildifier) >&2; then
    echo "buildifier.sh: building github.com/bazelbuild/buildtools/buildifier@${VERSION} failed" >&2
    exit 1
  fi
  mv "${tmp}/bin/buildifier" "${BIN}.partial"
  mv "${BIN}.partial" "${BIN}"  # atomic: a concurrent caller sees either nothing or the whole binary
fi
echo "${BIN}"
