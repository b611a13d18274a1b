#!/usr/bin/python3
"""Checks the coach-training OCI image layout archive (tools/image/build-training), independently of the builder.

  validate_training.py ARCHIVE --tag TAG [--alias-tag TAG] [--epoch N]

The OCI structure as validate_oci.py checks the operator's image (its helpers, reused): every blob's
sha256 and size against its descriptor, media types, the config's diff_ids against the uncompressed
layer, no unreferenced blobs, relative names; streamed, since the layer is large. Then what is
particular to this image: the names in index.json (ref.name and io.containerd.image.name for TAG and
ALIAS), config User 1000:1000, HOME=/tmp, PATH, WorkingDir /opt/coach; the layer's entries sorted,
every mtime the epoch, no user or group names; /usr/bin/python3, the example programs under
/opt/coach/examples, the coach user, /tmp 1777, and none of what the build leaves out (docs, man
pages, apt lists, resolv.conf). Prints the manifest digest; exits 1 naming each problem.
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

REQUIRED_FILES = (
    "usr/bin/python3", "usr/bin/mpirun", "etc/ssl/certs/ca-certificates.crt",
    "opt/coach/examples/pytorch/ddp_train.py", "opt/coach/examples/xgboost/xgb_train.py",
    "opt/coach/examples/README.md",
)
ABSENT_PREFIXES = ("usr/share/man/", "usr/share/info/", "usr/share/locale/", "var/lib/apt/lists/",
                   "var/cache/apt/archives/", "usr/lib/libtorch-test/", "usr/include/", "tmp/", "proc/",
                   "sys/", "dev/", "run/")
ABSENT_FILES = ("etc/resolv.conf", "etc/hostname", "etc/apt/sources.list")


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


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("archive")
    ap.add_argument("--tag", required=True)
    ap.add_argument("--alias-tag")
    ap.add_argument("--epoch", type=int, default=0)
    args = ap.parse_args()

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
    if not check(len(layers) == 1, f"manifest: {len(layers)} layers, want 1"):
        return
    layer_member = resolve(layers[0], MT_LAYER, "manifest layers[0]")
    check(referenced == set(blobs), f"blobs nothing references: {sorted(set(blobs) - referenced)}")
    if config_member is None or layer_member is None:
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

    # The layer: one pass, hashing the compressed and the uncompressed stream.
    head = outer.extractfile(layer_member).read(10)
    check(head[3] == 0 and head[4:8] == b"\0\0\0\0", "layer: gzip header has a name or a timestamp")
    raw = HashingReader(outer.extractfile(layer_member))
    plain = HashingReader(gzip.GzipFile(fileobj=raw, mode="rb"))
    names = []
    entries = {}
    passwd = b""
    bad_mtimes = bad_names = 0
    with tarfile.open(fileobj=plain, mode="r|") as layer:
        for m in layer:
            name = m.name.rstrip("/")
            names.append(name)
            entries[name] = m
            if m.mtime != args.epoch:
                bad_mtimes += 1
                if bad_mtimes <= 5:
                    check(False, f"layer {m.name}: mtime {m.mtime}, want {args.epoch}")
            if m.uname or m.gname:
                bad_names += 1
            check(not m.name.startswith("/") and ".." not in m.name.split("/"), f"layer {m.name}: not relative")
            if name == "etc/passwd":
                passwd = layer.extractfile(m).read()
        while plain.read(1 << 20):
            pass
    while raw.read(1 << 20):
        pass
    check(raw.sha.hexdigest() == layers[0]["digest"][7:], f"layer: content hashes to sha256:{raw.sha.hexdigest()}")
    check(config.get("rootfs", {}).get("diff_ids") == ["sha256:" + plain.sha.hexdigest()],
          f"config: rootfs.diff_ids {config.get('rootfs', {}).get('diff_ids')}, the layer hashes to sha256:{plain.sha.hexdigest()}")
    check(bad_mtimes == 0, f"layer: {bad_mtimes} entries with an mtime other than {args.epoch}")
    check(bad_names == 0, f"layer: {bad_names} entries with user or group names")
    check(names == sorted(names), "layer: entries are not sorted")
    check(len(names) == len(set(names)), "layer: duplicate entries")
    for name in REQUIRED_FILES:
        check(name in entries, f"layer: {name} missing")
    for name in ABSENT_FILES:
        check(name not in entries, f"layer: {name} present (host-specific)")
    for prefix in ABSENT_PREFIXES:
        found = [n for n in names if n.startswith(prefix)]
        check(not found, f"layer: {len(found)} entries under {prefix} (first {found[:1]})")
    check(b"coach:x:1000:1000:" in passwd, "layer: etc/passwd has no coach:x:1000:1000")
    tmp = entries.get("tmp")
    check(tmp is not None and tmp.isdir() and tmp.mode == 0o1777, "layer: tmp must be a directory with mode 1777")

    docker = json.loads(read("manifest.json")) if "manifest.json" in members else []
    if check(len(docker) == 1, "manifest.json: want one image (docker load before Docker 25)"):
        check(docker[0].get("Config") == "blobs/sha256/" + manifest["config"]["digest"][7:], "manifest.json: Config")
        check(docker[0].get("Layers") == ["blobs/sha256/" + layers[0]["digest"][7:]], "manifest.json: Layers")
        check(sorted(t.rsplit(":", 1)[1] for t in docker[0].get("RepoTags", [])) == sorted(tags), "manifest.json: RepoTags")

    if not validate_oci.problems:
        print(f"{args.archive}: valid OCI image layout; manifest {manifest_digest}, {len(entries)} entries, "
              f"layer {plain.size} bytes ({raw.size} compressed)")


if __name__ == "__main__":
    main()
    for p in validate_oci.problems:
        print(f"validate_training: {p}", file=sys.stderr)
    sys.exit(1 if validate_oci.problems else 0)
