#!/usr/bin/env bash
# The operator's container image (tools/image/build, an OCI image layout archive built with no
# container engine):
#  1. two builds give the same archive and manifest digest;
#  2. the archive is a valid OCI image layout (tools/image/validate_oci.py: blob digests and sizes,
#     media types, diff_ids, config, the layer's entries);
#  3. its layer, unpacked into an empty directory, runs as a container would run it: chroot into it
#     as 65532:65532 with a fresh /proc (in a private mount namespace, gone when the process ends)
#     and an empty environment but the image's PATH. coach-operator --help and coach-launch --help
#     run (every shared library is in the image); `coach-launch --install /tmp/x` (the launcher init
#     container's command) works and its copy runs, from the image and from a root holding only the
#     copy (as in another image); coach-operator --backend=local serves /healthz, as 65532.
# The image holds the binaries this suite was given (its runfiles: what the other tests ran).
# Needs root (chroot, mount); without it the suite fails under CI=true, else skips.
set -euo pipefail
# shellcheck source=tools/suites/lib.sh
source "$(dirname "$(readlink -f "$0")")/lib.sh"
suite_init image
[[ $(id -u) -eq 0 ]] || skip "needs root (chroot)"
for tool in unshare mount chroot curl tar; do
  command -v "$tool" >/dev/null || fail "$tool not found"
done
runfiles=$(suite_runfiles) || exit 1
chroot_bin=$(command -v chroot)
mount_bin=$(command -v mount)

work=$(mktemp -d /tmp/coach-image-test.XXXXXX)
operator_pid=""
cleanup() {
  if [[ -n "$operator_pid" ]]; then kill -KILL "$operator_pid" 2>/dev/null || true; wait "$operator_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
suite_on_exit cleanup

tag=test-$$
revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)  # the same for both builds
# What the builds read from the tree: HEAD, the changes to tracked files and the untracked files.
# Others may edit this tree while the suite runs; two builds are compared only when it stood still.
fingerprint() {
  {
    git rev-parse HEAD
    git diff HEAD --binary
    git ls-files -o --exclude-standard -z | xargs -0 -r sha256sum
  } 2>/dev/null | sha256sum
}
build() {  # build N: tools/image/build into $work/N.tar; prints its manifest digest
  tools/image/build --bin-dir "$runfiles" --out "$work/$1.tar" --tag "$tag" --revision "$revision" >"$work/build$1.log" 2>&1 \
    || { tail -40 "$work/build$1.log" >&2; fail "tools/image/build"; }
  local d
  d=$(sed -n 's/^manifest: \(sha256:[0-9a-f]\{64\}\).*/\1/p' "$work/build$1.log")
  [[ -n "$d" ]] || { cat "$work/build$1.log" >&2; fail "tools/image/build printed no manifest digest"; }
  echo "$d"
}
suite_case "two builds, one digest"
for _ in 1 2 3; do
  before=$(fingerprint)
  say "build 1"
  digest1=$(build a)
  say "build 2"
  digest2=$(build b)
  [[ "$digest1" == "$digest2" ]] && break
  if [[ "$(fingerprint)" == "$before" ]]; then
    /usr/bin/python3 - "$work/a.tar" "$work/b.tar" <<'PY' >&2 || true
import gzip, hashlib, io, json, sys, tarfile
def files(path):
    with tarfile.open(path) as t:
        blobs = {m.name: t.extractfile(m).read() for m in t if m.isfile()}
    index = json.loads(blobs["index.json"])
    manifest = json.loads(blobs["blobs/sha256/" + index["manifests"][0]["digest"][7:]])
    layer = gzip.decompress(blobs["blobs/sha256/" + manifest["layers"][0]["digest"][7:]])
    with tarfile.open(fileobj=io.BytesIO(layer)) as t:
        return {m.name: (m.get_info(), hashlib.sha256(t.extractfile(m).read()).hexdigest() if m.isfile() else "")
                for m in t}
a, b = files(sys.argv[1]), files(sys.argv[2])
for name in sorted(set(a) | set(b)):
    if a.get(name) != b.get(name):
        print("differs:", name)
PY
    fail "two builds of an unchanged tree, two digests: $digest1 and $digest2"
  fi
  say "the tree changed during the builds (someone else's edit); building both again"
done
[[ "$digest1" == "$digest2" ]] || fail "the tree kept changing; no two builds of the same tree to compare"
cmp -s "$work/a.tar" "$work/b.tar" || fail "two builds, the same manifest digest but different archives"
say "reproducible: $digest1"

suite_case "a valid OCI image layout"
/usr/bin/python3 tools/image/validate_oci.py "$work/a.tar" --tag "$tag" --epoch "${SOURCE_DATE_EPOCH:-0}" \
  || fail "not a valid OCI image layout"

suite_case "the Dockerfile describes the same image"
# Unpack the layer (the manifest's only one) the way a runtime does, keeping numeric owners.
mkdir -p "$work/oci" "$work/rootfs"
tar -xf "$work/a.tar" -C "$work/oci"
layer=$(/usr/bin/python3 -c '
import json, sys
d = sys.argv[1]
index = json.load(open(d + "/index.json"))
manifest = json.load(open(d + "/blobs/sha256/" + index["manifests"][0]["digest"][7:]))
print(d + "/blobs/sha256/" + manifest["layers"][0]["digest"][7:])' "$work/oci")
tar -xzpf "$layer" --numeric-owner -C "$work/rootfs"
mkdir -p "$work/rootfs/proc"  # a runtime mounts /proc (coach-launch --install reads /proc/self/exe)

image_path=$(/usr/bin/python3 -c '
import json, sys
d = sys.argv[1]
index = json.load(open(d + "/index.json"))
manifest = json.load(open(d + "/blobs/sha256/" + index["manifests"][0]["digest"][7:]))
config = json.load(open(d + "/blobs/sha256/" + manifest["config"]["digest"][7:]))
print([e for e in config["config"]["Env"] if e.startswith("PATH=")][0][5:])' "$work/oci")

# The Dockerfile (not run here: no container engine) must describe the same image.
/usr/bin/python3 - "$work/oci" Dockerfile charts/coach/Chart.yaml <<'PY' || fail "Dockerfile and tools/image/build disagree"
import json, re, sys
d, dockerfile, chart = sys.argv[1:]
index = json.load(open(d + "/index.json"))
manifest = json.load(open(d + "/blobs/sha256/" + index["manifests"][0]["digest"][7:]))
config = json.load(open(d + "/blobs/sha256/" + manifest["config"]["digest"][7:]))["config"]
text = open(dockerfile).read()
final = text[text.rindex("\nFROM "):]
app_version = re.search(r'^appVersion:\s*"?([^"\s]+)', open(chart).read(), re.M).group(1)
want = {
    "ENTRYPOINT": json.dumps(config["Entrypoint"]),
    "USER": config["User"],
    "ENV": [e for e in config["Env"] if e.startswith("PATH=")][0],
}
bad = []
for key, value in want.items():
    found = re.findall(r"^%s\s+(.*)$" % key, final, re.M)
    if [f.replace('", "', '","') for f in found] != [value]:
        bad.append(f"final stage {key} {found}, want {value}")
if not re.search(r"^FROM scratch$", final, re.M) or "COPY --from=build /rootfs/ /" not in final:
    bad.append("the final stage must be FROM scratch + COPY --from=build /rootfs/ /")
if "tools/image/build" not in text or "--layer-tar /out/layer.tar" not in text:
    bad.append("the build stage must assemble the root filesystem with tools/image/build --layer-tar")
m = re.search(r"^ARG VERSION=(\S+)$", text, re.M)
if not m or m.group(1) != app_version:
    bad.append(f"ARG VERSION={m.group(1) if m else None}, the chart's appVersion is {app_version}")
for b in bad:
    print("image: Dockerfile:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
say "ok: the Dockerfile's final stage matches the image's config"

# in_root ROOT COMMAND...: sets cmd to run COMMAND in ROOT as 65532:65532, as a container runs it;
# each step execs the next, so a process started from "${cmd[@]}" & has $! as its pid.
in_root() {
  local root=$1
  shift
  # shellcheck disable=SC2016  # the inner script's "$1".."$3" and "${@:4}" are its own arguments
  cmd=(env -i PATH="$image_path" HOME=/home/nonroot
    unshare --mount --propagation private -- "$BASH" -c
    '"$1" -t proc proc "$3/proc" && exec "$2" --userspec=65532:65532 "$3" "${@:4}"'
    in_root "$mount_bin" "$chroot_bin" "$root" "$@")
}

expect_run() {  # expect_run WHAT NEEDLE ROOT COMMAND...: exit 0 and NEEDLE in the output
  local what=$1 needle=$2
  shift 2
  suite_case "$what"
  local rc=0
  in_root "$@"
  "${cmd[@]}" >"$work/out" 2>&1 || rc=$?
  ((rc == 0)) || { cat "$work/out"; fail "$what: exit $rc"; }
  [[ -z "$needle" ]] || grep -qF -- "$needle" "$work/out" || { cat "$work/out"; fail "$what: no \"$needle\" in its output"; }
  say "ok: $what"
}

expect_run "coach-operator --help in the image" "coach-operator:" \
  "$work/rootfs" /usr/local/bin/coach-operator --help
expect_run "coach-launch --help in the image" "coach-launch --install DIR" \
  "$work/rootfs" /usr/local/bin/coach-launch --help
expect_run "coach-launch on PATH in the image" "coach-launch --install DIR" \
  "$work/rootfs" coach-launch --help
expect_run "coach-launch --install /tmp/x (the launcher init container)" "" \
  "$work/rootfs" /usr/local/bin/coach-launch --install /tmp/x
[[ -x "$work/rootfs/tmp/x/bin/coach-launch" && -x "$work/rootfs/tmp/x/lib/ld.so" ]] \
  || fail "coach-launch --install /tmp/x wrote no /tmp/x/bin/coach-launch and /tmp/x/lib/ld.so"
# The command the operator gives a wrapped replica (operator/reconcile/launcher_wrap.cc).
expect_run "the installed copy runs a program (in the image)" "coach-operator:" \
  "$work/rootfs" /tmp/x/lib/ld.so --library-path /tmp/x/lib /tmp/x/bin/coach-launch -- \
  /usr/local/bin/coach-operator --help
# In a root with nothing but the copy: the replica's own image need not have any library.
mkdir -p "$work/bare/proc" "$work/bare/tmp"
chmod 1777 "$work/bare/tmp"
cp -a "$work/rootfs/tmp/x" "$work/bare/x"
expect_run "the installed copy in a root with nothing else" "coach-launch --install DIR" \
  "$work/bare" /x/lib/ld.so --library-path /x/lib /x/bin/coach-launch --help

suite_case "coach-operator --backend=local serves /healthz as 65532"
# coach-operator on the local backend, as 65532, on loopback ports; /healthz from outside.
read -r grpc_port http_port < <(/usr/bin/python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in socks])')
in_root "$work/rootfs" /usr/local/bin/coach-operator --backend=local --listen="127.0.0.1:$grpc_port" \
  --http-listen="127.0.0.1:$http_port" --state-dir=/tmp/state
"${cmd[@]}" >"$work/operator.log" 2>&1 &
operator_pid=$!
healthy=0
for _ in $(seq 1 100); do
  if curl -fsS --max-time 2 "http://127.0.0.1:$http_port/healthz" >"$work/healthz" 2>/dev/null; then healthy=1; break; fi
  kill -0 "$operator_pid" 2>/dev/null || break
  sleep 0.1
done
((healthy)) || { cat "$work/operator.log"; fail "coach-operator --backend=local in the image: /healthz never answered"; }
uid=$(awk '/^Uid:/ {print $2}' "/proc/$operator_pid/status")
[[ "$uid" == 65532 ]] || fail "coach-operator runs as uid $uid, want 65532"
[[ -f "$work/rootfs/tmp/state/coach.db" ]] || fail "coach-operator wrote no /tmp/state/coach.db"
say "ok: coach-operator --backend=local serves /healthz ($(cat "$work/healthz")) as uid $uid"
kill -TERM "$operator_pid"
rc=0
wait "$operator_pid" || rc=$?
operator_pid=""
((rc == 0)) || { cat "$work/operator.log"; fail "coach-operator exited $rc on SIGTERM"; }

say "$digest1"
