#!/usr/bin/python3
"""Writes a coach-training-<framework> image archive: coach-training's first (Debian) layer, the same
blob, with a virtualenv layer above it.

  assemble_framework.py --base ARCHIVE --layer TAR --venv DIR --out FILE --repository NAME --tag TAG
                        [--alias-tag TAG] --created-by TEXT --description TEXT

Called by tools/image/build-framework-image; see that script. ARCHIVE is a coach-training archive
(tools/image/build-training); TAR a plain layer that pack_layer.py wrote (its digest in TAR.sha256)
holding the venv DIR. The config is the base's (user, working directory, command, Open MPI's
settings) with DIR/bin first on PATH, VIRTUAL_ENV=DIR and Cmd ["python3"], so that `python3` and the
framework's commands are the venv's. Prints the manifest digest.
"""

import argparse
import json
import os
import shutil
import sys
import tarfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oci_layout import MT_LAYER, MT_LAYER_TAR, ExtraLayer, image_config, source_date_epoch, write_archive  # noqa: E402


def die(message):
    print(f"assemble_framework: {message}", file=sys.stderr)
    sys.exit(1)


def blob_name(d):
    return "blobs/sha256/" + d[len("sha256:"):]


def read_base(path, first_layer_out):
    """The base archive's image config; copies its first layer's blob to `first_layer_out`."""
    with tarfile.open(path) as tar:
        def member_bytes(name):
            f = tar.extractfile(name)
            if f is None:
                die(f"{path}: {name} is not a file")
            return f.read()
        try:
            index = json.loads(member_bytes("index.json"))
            manifest = json.loads(member_bytes(blob_name(index["manifests"][0]["digest"])))
            config = json.loads(member_bytes(blob_name(manifest["config"]["digest"])))
            first = manifest["layers"][0]
        except (KeyError, IndexError, ValueError) as e:
            die(f"{path}: not an OCI image layout archive ({e})")
        if first["mediaType"] != MT_LAYER:
            die(f"{path}: first layer is {first['mediaType']}, want {MT_LAYER}")
        src = tar.extractfile(blob_name(first["digest"]))
        with open(first_layer_out, "wb") as out:
            shutil.copyfileobj(src, out, 1 << 20)
    return config


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True)
    ap.add_argument("--layer", required=True)
    ap.add_argument("--venv", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repository", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--alias-tag")
    ap.add_argument("--created-by", required=True)
    ap.add_argument("--description", required=True)
    args = ap.parse_args()

    try:
        with open(args.layer + ".sha256") as f:
            layer_digest = f.read().strip()
    except OSError as e:
        die(f"--layer {args.layer}: no digest ({e})")
    if not (layer_digest.startswith("sha256:") and len(layer_digest) == 71 and os.path.isfile(args.layer)):
        die(f"--layer {args.layer}: not a layer with its digest in {args.layer}.sha256")

    first_layer = args.out + ".base-layer.tmp"
    base = read_base(args.base, first_layer)
    runtime = dict(base["config"])
    env = []
    for item in runtime.get("Env", []):
        if item.startswith("PATH="):
            item = f"PATH={args.venv}/bin:" + item[len("PATH="):]
        env.append(item)
    if not any(item.startswith("PATH=") for item in env):
        die(f"{args.base}: the image config sets no PATH")
    runtime["Env"] = env + [f"VIRTUAL_ENV={args.venv}"]
    runtime["Cmd"] = ["python3"]  # the base's runs its PyTorch example
    labels = dict(runtime.get("Labels") or {})
    labels["org.opencontainers.image.title"] = args.repository.rsplit("/", 1)[-1]
    labels["org.opencontainers.image.version"] = args.tag
    labels["org.opencontainers.image.description"] = args.description
    runtime["Labels"] = labels

    epoch = source_date_epoch()
    extra = ExtraLayer(args.layer, layer_digest, MT_LAYER_TAR, layer_digest, args.created_by)
    config = image_config(epoch, runtime, base["rootfs"]["diff_ids"][0], base["history"][0]["created_by"], [extra])
    tags = [args.tag] + ([args.alias_tag] if args.alias_tag and args.alias_tag != args.tag else [])
    written = write_archive(args.out, epoch, config, first_layer, args.repository, tags, [extra])
    os.unlink(first_layer)
    print(f"image:    {', '.join(f'{args.repository}:{t}' for t in tags)}")
    print(f"archive:  {args.out} ({os.path.getsize(args.out)} bytes)")
    print(f"manifest: {written.manifest_digest}")


if __name__ == "__main__":
    main()
