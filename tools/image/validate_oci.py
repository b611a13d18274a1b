#!/usr/bin/python3
"""Checks an OCI image layout archive as tools/image/build writes it, independently of the builder.

  validate_oci.py ARCHIVE --tag TAG [--epoch N]

Every blob's sha256 matches its name and the size its descriptor states; media types; the config's
diff_ids are the sha256 of the uncompressed layers; entrypoint, user, PATH, labels, platform; the
tag in index.json; the layer's entries (sorted, fixed mtimes, root-owned but for /home/nonroot) and
the files the operator needs at run time. Prints the manifest digest; exits 1 naming each problem.
"""

import argparse
import gzip
import hashlib
import io
import json
import sys
import tarfile

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"

problems = []


def check(ok, message):
    if not ok:
        problems.append(message)
    return ok


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("archive")
    ap.add_argument("--tag", required=True)
    ap.add_argument("--epoch", type=int, default=0, help="expected mtime of every entry")
    args = ap.parse_args()

    files = {}
    with tarfile.open(args.archive, "r:") as tar:  # an uncompressed tar, as oci-archive: wants
        for member in tar:
            check(not member.name.startswith("/") and ".." not in member.name.split("/"),
                  f"archive entry {member.name!r}: not a relative path")
            if member.isfile():
                files[member.name] = tar.extractfile(member).read()
    check(json.loads(files.get("oci-layout", b"{}")) == {"imageLayoutVersion": "1.0.0"},
          "oci-layout: want {\"imageLayoutVersion\": \"1.0.0\"}")
    blobs = {}
    for name, data in files.items():
        if name.startswith("blobs/"):
            algo, _, hexdigest = name[len("blobs/"):].partition("/")
            if check(algo == "sha256", f"{name}: not under blobs/sha256/"):
                check(sha256(data) == "sha256:" + hexdigest, f"{name}: content hashes to {sha256(data)}")
                blobs["sha256:" + hexdigest] = data
    referenced = set()

    def resolve(descriptor, media_type, where):
        d = descriptor.get("digest", "")
        check(descriptor.get("mediaType") == media_type,
              f"{where}: mediaType {descriptor.get('mediaType')!r}, want {media_type}")
        if not check(d in blobs, f"{where}: blob {d} missing"):
            return None
        referenced.add(d)
        check(descriptor.get("size") == len(blobs[d]),
              f"{where}: size {descriptor.get('size')}, the blob has {len(blobs[d])} bytes")
        return blobs[d]

    index = json.loads(files.get("index.json", b"{}"))
    check(index.get("schemaVersion") == 2, "index.json: schemaVersion must be 2")
    check(index.get("mediaType") == MT_INDEX, f"index.json: mediaType must be {MT_INDEX}")
    manifests = index.get("manifests", [])
    if not check(len(manifests) == 1, f"index.json: {len(manifests)} manifests, want 1"):
        return
    ref = manifests[0].get("annotations", {}).get("org.opencontainers.image.ref.name")
    check(ref == args.tag, f"index.json: org.opencontainers.image.ref.name {ref!r}, want {args.tag!r}")
    manifest_digest = manifests[0].get("digest")
    manifest_blob = resolve(manifests[0], MT_MANIFEST, "index.json manifests[0]")
    if manifest_blob is None:
        return
    manifest = json.loads(manifest_blob)
    check(manifest.get("schemaVersion") == 2, "manifest: schemaVersion must be 2")
    check(manifest.get("mediaType") == MT_MANIFEST, f"manifest: mediaType must be {MT_MANIFEST}")
    config_blob = resolve(manifest.get("config", {}), MT_CONFIG, "manifest config")
    layers = [resolve(layer, MT_LAYER, f"manifest layers[{i}]") for i, layer in enumerate(manifest.get("layers", []))]
    check(len(layers) >= 1, "manifest: no layers")
    check(referenced == set(blobs), f"blobs nothing references: {sorted(set(blobs) - referenced)}")
    if config_blob is None or None in layers:
        return

    config = json.loads(config_blob)
    check(config.get("architecture") == "amd64", "config: architecture must be amd64")
    check(config.get("os") == "linux", "config: os must be linux")
    c = config.get("config", {})
    check(c.get("Entrypoint") == ["/usr/local/bin/coach-operator"], f"config: Entrypoint {c.get('Entrypoint')}")
    check(c.get("User") == "65532:65532", f"config: User {c.get('User')!r}, want 65532:65532")
    check(any(e.startswith("PATH=") and "/usr/local/bin" in e for e in c.get("Env", [])),
          f"config: Env {c.get('Env')} has no PATH with /usr/local/bin")
    labels = c.get("Labels", {})
    for key in ("source", "version", "revision"):
        check(bool(labels.get(f"org.opencontainers.image.{key}")), f"config: label org.opencontainers.image.{key} missing")
    check(labels.get("org.opencontainers.image.version") == args.tag, "config: label version is not the tag")
    rootfs = config.get("rootfs", {})
    check(rootfs.get("type") == "layers", "config: rootfs.type must be layers")
    uncompressed = []
    for i, layer in enumerate(layers):
        with gzip.GzipFile(fileobj=io.BytesIO(layer)) as g:
            uncompressed.append(g.read())
        check(layer[3] == 0 and layer[4:8] == b"\0\0\0\0", f"layer {i}: gzip header has a name or a timestamp")
    diff_ids = [sha256(u) for u in uncompressed]
    check(rootfs.get("diff_ids") == diff_ids,
          f"config: rootfs.diff_ids {rootfs.get('diff_ids')}, the uncompressed layers hash to {diff_ids}")

    # The root filesystem (one layer).
    entries = {}
    contents = {}
    names = []
    with tarfile.open(fileobj=io.BytesIO(uncompressed[-1]), mode="r:") as tar:
        for m in tar:
            names.append(m.name)
            entries[m.name.rstrip("/")] = m
            check(m.mtime == args.epoch, f"layer {m.name}: mtime {m.mtime}, want {args.epoch}")
            owner = (65532, 65532) if m.name.rstrip("/") == "home/nonroot" else (0, 0)
            check((m.uid, m.gid) == owner, f"layer {m.name}: owner {m.uid}:{m.gid}, want {owner[0]}:{owner[1]}")
            check(not m.name.startswith("/") and ".." not in m.name.split("/"), f"layer {m.name}: not relative")
            if m.isfile():
                contents[m.name] = tar.extractfile(m).read()
    check(names == sorted(names), "layer: entries are not sorted")
    for name in ("usr/local/bin/coach-operator", "usr/local/bin/coach-launch", "usr/local/bin/coach-replica-shim"):
        m = entries.get(name)
        if check(m is not None and m.isfile(), f"layer: {name} missing"):
            check(m.mode & 0o755 == 0o755, f"layer: {name} mode {oct(m.mode)}")
    for name, needle in (("etc/passwd", b"nonroot:x:65532:65532:"), ("etc/group", b"nonroot:x:65532:"),
                         ("etc/nsswitch.conf", b"hosts:"),
                         ("etc/ssl/certs/ca-certificates.crt", b"-----BEGIN CERTIFICATE-----")):
        m = entries.get(name)
        if check(m is not None and m.isfile(), f"layer: {name} missing"):
            check(needle in contents[m.name], f"layer: {name} lacks {needle!r}")
    tmp = entries.get("tmp")
    check(tmp is not None and tmp.isdir() and tmp.mode == 0o1777, "layer: tmp must be a directory with mode 1777")

    docker = json.loads(files.get("manifest.json", b"[]"))
    if check(len(docker) == 1, "manifest.json: want one image (docker load before Docker 25)"):
        check(docker[0].get("Config") == "blobs/sha256/" + manifest["config"]["digest"][7:],
              "manifest.json: Config is not the config blob")
        check(docker[0].get("Layers") == ["blobs/sha256/" + l["digest"][7:] for l in manifest["layers"]],
              "manifest.json: Layers are not the layer blobs")
        check(all(t.endswith(":" + args.tag) for t in docker[0].get("RepoTags", [""])),
              "manifest.json: RepoTags do not end with the tag")

    if not problems:
        size = len(manifest_blob) + len(config_blob) + sum(len(l) for l in layers)
        print(f"{args.archive}: valid OCI image layout; manifest {manifest_digest}, "
              f"{len(entries)} files, {size} bytes")


if __name__ == "__main__":
    main()
    for p in problems:
        print(f"validate_oci: {p}", file=sys.stderr)
    sys.exit(1 if problems else 0)
