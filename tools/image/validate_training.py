#!/usr/bin/python3
"""Checks the coach-training OCI image layout archive (tools/image/build-training), independently of the builder.

  validate_training.py ARCHIVE --tag TAG [--alias-tag TAG] [--epoch N]
                       [--framework NAME --base BASE_ARCHIVE]

The OCI structure as validate_oci.py checks the operator's image (its helpers, reused): every blob's
sha256 and size against its descriptor, media types, the config's diff_ids against the uncompressed
layers, no unreferenced blobs, relative names; streamed, since the layers are large. Then what is
particular to this image: the names in index.json (ref.name and io.containerd.image.name for TAG and
ALIAS), config User 1000:1000, HOME=/tmp, PATH, WorkingDir /opt/coach; two layers, the Debian one
gzip-compressed, PyTorch's a plain tar; each layer's entries sorted, every mtime the epoch, no user
or group names, no whiteouts; /usr/bin/python3, the example programs under /opt/coach/examples, the
coach user, /tmp 1777 (first layer), torch and /usr/local/bin/torchrun (second), and none of what the
build leaves out (docs, man pages, apt lists, resolv.conf). With --framework, a
coach-training-<framework> image (tools/image/build-framework-image) instead: its first layer the
same blob as BASE_ARCHIVE's, its second the virtualenv /opt/venv holding the framework's module,
first on PATH. Prints the manifest digest; exits 1 naming each problem.
"""

import argparse
import gzip
import hashlib
import json
import os
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import validate_oci  # noqa: E402  (check, problems, sha256, media types)
from validate_oci import MT_CONFIG, MT_INDEX, MT_LAYER, MT_MANIFEST, check, sha256  # noqa: E402

MT_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"
# What each layer must hold: the Debian one, then PyTorch's.
REQUIRED_FILES = (
    ("usr/bin/python3", "usr/bin/mpirun", "usr/sbin/sshd", "usr/bin/ssh", "home/mpiuser/.sshd_config",
     "etc/ssh/ssh_config.d/coach-mpi.conf", "etc/ssl/certs/ca-certificates.crt",
     "opt/coach/examples/pytorch/ddp_train.py", "opt/coach/examples/xgboost/xgb_train.py",
     "opt/coach/examples/README.md"),
    ("usr/local/bin/torchrun", "usr/local/lib/python3.11/dist-packages/torch/__init__.py",
     "usr/local/lib/python3.11/dist-packages/torch/distributed/run.py"),
)
LAYER_TYPES = (MT_LAYER, MT_LAYER_TAR)
# A framework image's second layer, and the package each framework's venv must hold.
VENV_FILES = ("opt/venv/pyvenv.cfg", "opt/venv/bin/python3")
FRAMEWORK_PACKAGES = {"tensorflow": "tensorflow", "jax": "jax", "paddle": "paddle", "xgboost": "xgboost"}
ABSENT_PREFIXES = ("usr/share/man/", "usr/share/info/", "usr/share/locale/", "var/lib/apt/lists/",
                   "var/cache/apt/archives/", "usr/lib/libtorch-test/", "usr/include/", "tmp/", "proc/",
                   "sys/", "dev/", "run/")
ABSENT_FILES = ("etc/resolv.conf", "etc/hostname", "etc/apt/sources.list",
                # openssh-server's host keys, made at install: the MPI runtimes' sshd uses the job's key.
                "etc/ssh/ssh_host_ecdsa_key", "etc/ssh/ssh_host_ed25519_key", "etc/ssh/ssh_host_rsa_key")


class HashingReader:
    """Reads a file object, hashing what it returns."""

    def __init__(self, f):
        self.f = f
        self.sha = hashlib.sha256()
        self.size = 0

    def read(self, n=-1):
        data = self.f.read(n)
        self.sha.update(data)
        self.size += len(data)
        return data


def check_layer(outer, member, descriptor, i, epoch, entries):
    """Reads layer `i` in one pass, hashing the stored and the uncompressed stream; adds its entries
    to `entries` (name -> (TarInfo, content of etc/passwd or b"")), a later layer's replacing an
    earlier one's. Returns (diff_id, (uncompressed size, stored size), the layer's names)."""
    compressed = descriptor.get("mediaType") == MT_LAYER
    if compressed:
        head = outer.extractfile(member).read(10)
        check(head[3] == 0 and head[4:8] == b"\0\0\0\0", f"layer {i}: gzip header has a name or a timestamp")
    raw = HashingReader(outer.extractfile(member))
    plain = HashingReader(gzip.GzipFile(fileobj=raw, mode="rb")) if compressed else raw
    names = []
    bad_mtimes = bad_names = 0
    with tarfile.open(fileobj=plain, mode="r|") as layer:
        for m in layer:
            name = m.name.rstrip("/")
            names.append(name)
            content = layer.extractfile(m).read() if name == "etc/passwd" else b""
            entries[name] = (m, content)
            if m.mtime != epoch:
                bad_mtimes += 1
                if bad_mtimes <= 5:
                    check(False, f"layer {i} {m.name}: mtime {m.mtime}, want {epoch}")
            if m.uname or m.gname:
                bad_names += 1
            check(not m.name.startswith("/") and ".." not in m.name.split("/"), f"layer {i} {m.name}: not relative")
            check(not os.path.basename(name).startswith(".wh."), f"layer {i} {m.name}: a whiteout")
        while plain.read(1 << 20):
            pass
    while raw.read(1 << 20):
        pass
    check(raw.sha.hexdigest() == descriptor["digest"][7:], f"layer {i}: content hashes to sha256:{raw.sha.hexdigest()}")
    check(bad_mtimes == 0, f"layer {i}: {bad_mtimes} entries with an mtime other than {epoch}")
    check(bad_names == 0, f"layer {i}: {bad_names} entries with user or group names")
    check(names == sorted(names), f"layer {i}: entries are not sorted")
    check(len(names) == len(set(names)), f"layer {i}: duplicate entries")
    return "sha256:" + plain.sha.hexdigest(), (plain.size, raw.size), set(names)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("archive")
    ap.add_argument("--tag", required=True)
    ap.add_argument("--alias-tag")
    ap.add_argument("--epoch", type=int, default=0)
    ap.add_argument("--framework", choices=sorted(FRAMEWORK_PACKAGES))
    ap.add_argument("--base", help="with --framework: the coach-training archive whose first layer it shares")
    args = ap.parse_args()
    required = list(REQUIRED_FILES)
    if args.framework:
        if not args.base:
            ap.error("--framework needs --base")
        package = FRAMEWORK_PACKAGES[args.framework]
        required[1] = VENV_FILES + (f"opt/venv/lib/python3.11/site-packages/{package}/__init__.py",)

    outer = tarfile.open(args.archive, "r:")
    members = {}
    for m in outer:
        check(not m.name.startswith("/") and ".." not in m.name.split("/"), f"archive entry {m.name!r}: not relative")
        if m.isfile():
            members[m.name] = m

    def read(name):
        return outer.extractfile(members[name]).read()

    check("oci-layout" in members and json.loads(read("oci-layout")) == {"imageLayoutVersion": "1.0.0"},
          "oci-layout: want {\"imageLayoutVersion\": \"1.0.0\"}")
    blobs = {}
    for name, m in members.items():
        if name.startswith("blobs/"):
            algo, _, hexdigest = name[len("blobs/"):].partition("/")
            if check(algo == "sha256", f"{name}: not under blobs/sha256/"):
                blobs["sha256:" + hexdigest] = m
    referenced = set()

    def resolve(descriptor, media_type, where):
        d = descriptor.get("digest", "")
        check(descriptor.get("mediaType") == media_type,
              f"{where}: mediaType {descriptor.get('mediaType')!r}, want {media_type}")
        if not check(d in blobs, f"{where}: blob {d} missing"):
            return None
        referenced.add(d)
        check(descriptor.get("size") == blobs[d].size, f"{where}: size {descriptor.get('size')}, the blob has {blobs[d].size}")
        return blobs[d]

    def small_blob(m):
        data = outer.extractfile(m).read()
        check(sha256(data) == "sha256:" + m.name.rsplit("/", 1)[1], f"{m.name}: content hashes to {sha256(data)}")
        return data

    index = json.loads(read("index.json")) if "index.json" in members else {}
    check(index.get("schemaVersion") == 2, "index.json: schemaVersion must be 2")
    check(index.get("mediaType") == MT_INDEX, f"index.json: mediaType must be {MT_INDEX}")
    manifests = index.get("manifests", [])
    tags = [args.tag] + ([args.alias_tag] if args.alias_tag else [])
    if not check(len(manifests) == len(tags), f"index.json: {len(manifests)} manifests, want {len(tags)}"):
        return
    check(len({m.get("digest") for m in manifests}) == 1, "index.json: the names do not share one manifest")
    for i, (m, tag) in enumerate(zip(manifests, tags)):
        annotations = m.get("annotations", {})
        check(annotations.get("org.opencontainers.image.ref.name") == tag,
              f"index.json manifests[{i}]: ref.name {annotations.get('org.opencontainers.image.ref.name')!r}, want {tag!r}")
        check(str(annotations.get("io.containerd.image.name", "")).endswith(":" + tag),
              f"index.json manifests[{i}]: io.containerd.image.name does not end with :{tag}")
        check(m.get("platform") == {"architecture": "amd64", "os": "linux"}, f"index.json manifests[{i}]: platform")
    manifest_digest = manifests[0].get("digest")
    manifest_member = resolve(manifests[0], MT_MANIFEST, "index.json manifests[0]")
    if manifest_member is None:
        return
    manifest = json.loads(small_blob(manifest_member))
    check(manifest.get("schemaVersion") == 2, "manifest: schemaVersion must be 2")
    check(manifest.get("mediaType") == MT_MANIFEST, f"manifest: mediaType must be {MT_MANIFEST}")
    config_member = resolve(manifest.get("config", {}), MT_CONFIG, "manifest config")
    layers = manifest.get("layers", [])
    if not check(len(layers) == len(LAYER_TYPES), f"manifest: {len(layers)} layers, want {len(LAYER_TYPES)}"):
        return
    layer_members = [resolve(layer, media_type, f"manifest layers[{i}]")
                     for i, (layer, media_type) in enumerate(zip(layers, LAYER_TYPES))]
    check(referenced == set(blobs), f"blobs nothing references: {sorted(set(blobs) - referenced)}")
    if config_member is None or None in layer_members:
        return
    config = json.loads(small_blob(config_member))
    check(config.get("architecture") == "amd64" and config.get("os") == "linux", "config: want linux/amd64")
    c = config.get("config", {})
    env = c.get("Env", [])
    check(c.get("User") == "1000:1000", f"config: User {c.get('User')!r}, want 1000:1000")
    check("HOME=/tmp" in env, f"config: Env {env} lacks HOME=/tmp")
    check(any(e.startswith("PATH=") and "/usr/bin" in e for e in env), f"config: Env {env} has no PATH with /usr/bin")
    check(c.get("WorkingDir") == "/opt/coach", f"config: WorkingDir {c.get('WorkingDir')!r}, want /opt/coach")
    check(c.get("Labels", {}).get("org.opencontainers.image.version") == args.tag, "config: label version is not the tag")
    if args.framework:
        check(any(e.startswith("PATH=/opt/venv/bin:") for e in env), f"config: Env {env}: /opt/venv/bin is not first on PATH")
        with tarfile.open(args.base, "r:") as base:
            blob = lambda d: json.load(base.extractfile("blobs/sha256/" + d[7:]))  # noqa: E731
            base_layers = blob(json.load(base.extractfile("index.json"))["manifests"][0]["digest"])["layers"]
        check(layers[0]["digest"] == base_layers[0]["digest"],
              f"manifest layers[0]: {layers[0]['digest']}, not the base image's first layer {base_layers[0]['digest']}")

    diff_ids = []
    sizes = []
    entries = {}
    for i, (layer_member, descriptor) in enumerate(zip(layer_members, layers)):
        diff_id, size, names = check_layer(outer, layer_member, descriptor, i, args.epoch, entries)
        diff_ids.append(diff_id)
        sizes.append(size)
        for name in required[i]:
            check(name in names, f"layer {i}: {name} missing")
    check(config.get("rootfs", {}).get("diff_ids") == diff_ids,
          f"config: rootfs.diff_ids {config.get('rootfs', {}).get('diff_ids')}, the layers hash to {diff_ids}")
    check(len(config.get("history", [])) == len(layers), "config: want one history entry a layer")
    for name in ABSENT_FILES:
        check(name not in entries, f"layers: {name} present (host-specific)")
    for prefix in ABSENT_PREFIXES:
        found = [n for n in entries if n.startswith(prefix)]
        check(not found, f"layers: {len(found)} entries under {prefix} (first {found[:1]})")
    passwd = entries.get("etc/passwd", (None, b""))[1]
    check(b"coach:x:1000:1000:" in passwd, "layers: etc/passwd has no coach:x:1000:1000")
    workdir = entries.get("opt/coach", (None,))[0]
    check(workdir is not None and workdir.isdir() and (workdir.uid, workdir.gid) == (1000, 1000),
          "layers: opt/coach (the working directory) must be a directory of 1000:1000")
    tmp = entries.get("tmp", (None,))[0]
    check(tmp is not None and tmp.isdir() and tmp.mode == 0o1777, "layers: tmp must be a directory with mode 1777")

    docker = json.loads(read("manifest.json")) if "manifest.json" in members else []
    if check(len(docker) == 1, "manifest.json: want one image (docker load before Docker 25)"):
        check(docker[0].get("Config") == "blobs/sha256/" + manifest["config"]["digest"][7:], "manifest.json: Config")
        check(docker[0].get("Layers") == ["blobs/sha256/" + x["digest"][7:] for x in layers], "manifest.json: Layers")
        check(sorted(t.rsplit(":", 1)[1] for t in docker[0].get("RepoTags", [])) == sorted(tags), "manifest.json: RepoTags")

    if not validate_oci.problems:
        print(f"{args.archive}: valid OCI image layout; manifest {manifest_digest}, {len(entries)} entries, "
              "layers " + ", ".join(f"{plain} bytes ({stored} stored)" for plain, stored in sizes))


if __name__ == "__main__":
    main()
    for p in validate_oci.problems:
        print(f"validate_training: {p}", file=sys.stderr)
    sys.exit(1 if validate_oci.problems else 0)
