"""Writes an OCI image layout archive: the one writer of tools/image's images.

assemble.py (the operator's image), assemble_training.py (coach-training) and oci_from_dir.py (the
real node's pause and busybox images, coach-kubectl-delivery) each build their layer and config;
write_archive() writes the rest: the config blob, the manifest, index.json naming the image once per
tag (org.opencontainers.image.ref.name, and io.containerd.image.name, from which containerd's `ctr
images import`, `kind load` and Docker 25+ name it), manifest.json (what `docker load` before Docker
25 reads), oci-layout and every blob under blobs/sha256/<its sha256>. Reproducible: JSON with sorted
keys and no spaces, archive entries sorted, every mtime the epoch, owners 0:0 without names.
"""

import datetime
import hashlib
import io
import json
import os
import subprocess
import tarfile
from collections import namedtuple

MT_INDEX = "application/vnd.oci.image.index.v1+json"
MT_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MT_CONFIG = "application/vnd.oci.image.config.v1+json"
MT_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
# A layer stored as a plain tar: its digest is its diff_id. For a layer of compressed libraries
# built on the machine that uses it, gzip would cost minutes and save little.
MT_LAYER_TAR = "application/vnd.oci.image.layer.v1.tar"

# A layer above the first: `path` the file holding it, `digest` its sha256 (as "sha256:..."),
# `media_type` MT_LAYER or MT_LAYER_TAR, `diff_id` the digest of its tar, `created_by` its history.
ExtraLayer = namedtuple("ExtraLayer", "path digest media_type diff_id created_by")

# What write_archive() wrote: the manifest's digest, its size and the config's size (bytes).
Written = namedtuple("Written", "manifest_digest manifest_size config_size")


def digest(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def file_digest(path):
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            sha.update(chunk)
    return "sha256:" + sha.hexdigest()


def canonical_json(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def source_date_epoch():
    """SOURCE_DATE_EPOCH, else 0: every mtime and the image's creation time."""
    return int(os.environ.get("SOURCE_DATE_EPOCH") or 0)


def gzip_layer(layer, level):
    """The layer tar compressed by gzip without a name or timestamp."""
    return subprocess.run(["gzip", "-n", f"-{level}", "-c"], input=layer, capture_output=True, check=True).stdout


def image_config(epoch, config, diff_id, created_by, extra_layers=()):
    """The image config of a linux/amd64 image: `config` its runtime settings (User, Entrypoint,
    Env...), `diff_id` the digest of the uncompressed first layer, `extra_layers` (ExtraLayer) the
    layers above it."""
    created = datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "created": created,
        "architecture": "amd64",
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [diff_id] + [x.diff_id for x in extra_layers]},
        "history": [{"created": created, "created_by": c}
                    for c in [created_by] + [x.created_by for x in extra_layers]],
    }


def _blob_name(d):
    return "blobs/sha256/" + d[len("sha256:"):]


def _archive_tar(out, files, mtime):
    """Writes `files` (archive name -> bytes, or a str: the path of a file to copy) and their parent
    directories as an uncompressed tar, sorted by name."""
    dirs = set()
    for name in files:
        parent = os.path.dirname(name)
        while parent:
            dirs.add(parent)
            parent = os.path.dirname(parent)
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for name in sorted(set(files) | dirs):
            info = tarfile.TarInfo(name)
            info.mtime = mtime
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if name in dirs:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
                continue
            info.mode = 0o644
            content = files[name]
            if isinstance(content, str):
                info.size = os.path.getsize(content)
                with open(content, "rb") as f:
                    tar.addfile(info, f)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))


def write_archive(out, epoch, config, layer, repository, tags, extra_layers=()):
    """Writes the OCI image layout archive `out` (through `out`.tmp, then renamed) of one image:
    `config` its image config (image_config()), `layer` its gzip layer, as bytes or as the path of
    a file holding it (streamed: a large layer stays on disk), `extra_layers` (ExtraLayer) the
    layers above it, named REPOSITORY:TAG for each of `tags` (one manifest, several names)."""
    config_blob = canonical_json(config)
    if isinstance(layer, str):
        layer_digest, layer_size = file_digest(layer), os.path.getsize(layer)
    else:
        layer_digest, layer_size = digest(layer), len(layer)
    manifest = {
        "schemaVersion": 2,
        "mediaType": MT_MANIFEST,
        "config": {"mediaType": MT_CONFIG, "digest": digest(config_blob), "size": len(config_blob)},
        "layers": [{"mediaType": MT_LAYER, "digest": layer_digest, "size": layer_size}] +
                  [{"mediaType": x.media_type, "digest": x.digest, "size": os.path.getsize(x.path)}
                   for x in extra_layers],
    }
    manifest_blob = canonical_json(manifest)
    references = [f"{repository}:{tag}" for tag in tags]
    index = {
        "schemaVersion": 2,
        "mediaType": MT_INDEX,
        "manifests": [{
            "mediaType": MT_MANIFEST,
            "digest": digest(manifest_blob),
            "size": len(manifest_blob),
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {
                "org.opencontainers.image.ref.name": tag,
                # containerd (ctr import, kind load) and Docker 25+ name the image from this one.
                "io.containerd.image.name": reference,
            },
        } for tag, reference in zip(tags, references)],
    }
    files = {
        "oci-layout": canonical_json({"imageLayoutVersion": "1.0.0"}),
        "index.json": canonical_json(index),
        # `docker load` before Docker 25 reads this instead of index.json (as `docker save` writes both).
        "manifest.json": canonical_json([{"Config": _blob_name(digest(config_blob)), "RepoTags": references,
                                          "Layers": [_blob_name(layer_digest)] +
                                                    [_blob_name(x.digest) for x in extra_layers]}]),
        _blob_name(layer_digest): layer,
        **{_blob_name(x.digest): x.path for x in extra_layers},
        _blob_name(digest(config_blob)): config_blob,
        _blob_name(digest(manifest_blob)): manifest_blob,
    }
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp"
    _archive_tar(tmp, files, epoch)
    os.replace(tmp, out)
    return Written(digest(manifest_blob), len(manifest_blob), len(config_blob))
