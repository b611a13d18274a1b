#!/usr/bin/python3
"""Packs a root filesystem folder as a one-layer OCI image layout archive, with no container engine.

    tools/image/oci_from_dir.py --rootfs DIR --name NAME:TAG --out FILE.tar
        [--entrypoint JSON] [--cmd JSON] [--env K=V]... [--workdir /] [--user UID:GID]

The archive names the image NAME:TAG for containerd (`ctr -n k8s.io images import FILE.tar`, as
`tools/testenv/testenv image-import` does), podman and docker (`load -i`). Reproducible like
tools/image/assemble.py (tools/image/oci_layout.py writes both archives): entries sorted, owners 0:0, mtimes
SOURCE_DATE_EPOCH (default 0), gzip without name or timestamp, canonical JSON. Regular files keep
their permission bits, symbolic links their targets; hard links are stored as copies; sockets,
fifos and devices are refused. Used for the real node's pause and busybox images
(tools/testenv/testenv up --real-node); any folder works (e.g. an mmdebstrap root filesystem).
"""

import argparse
import io
import json
import os
import stat
import sys
import tarfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oci_layout import digest, gzip_layer, image_config, source_date_epoch, write_archive  # noqa: E402

PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def die(message):
    print(f"tools/image/oci_from_dir: {message}", file=sys.stderr)
    sys.exit(1)


def layer_from_dir(root, mtime):
    buf = io.BytesIO()
    entries = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in dirnames + filenames:
            entries.append(os.path.join(dirpath, name))
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(entries, key=lambda p: os.path.relpath(p, root)):
            rel = os.path.relpath(path, root)
            st = os.lstat(path)
            info = tarfile.TarInfo(rel)
            info.mtime = mtime
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(path)
                info.mode = 0o777
                tar.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                info.size = st.st_size
                with open(path, "rb") as f:
                    tar.addfile(info, f)
            else:
                die(f"{path}: not a directory, regular file or symbolic link")
    return buf.getvalue()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rootfs", required=True, help="folder holding the image's root filesystem")
    ap.add_argument("--name", required=True, help="image reference NAME:TAG (e.g. coach.local/busybox:1.35)")
    ap.add_argument("--out", required=True, help="OCI image layout archive to write")
    ap.add_argument("--entrypoint", help="JSON list, e.g. '[\"/pause\"]'")
    ap.add_argument("--cmd", help="JSON list, e.g. '[\"sh\"]'")
    ap.add_argument("--env", action="append", default=[], help="K=V (PATH has a default)")
    ap.add_argument("--workdir", default="/")
    ap.add_argument("--user", default="", help="UID:GID (default: root)")
    args = ap.parse_args()

    if not os.path.isdir(args.rootfs):
        die(f"--rootfs {args.rootfs}: not a folder")
    repository, sep, tag = args.name.rpartition(":")
    if not sep or "/" in tag or not repository:
        die(f"--name {args.name}: want NAME:TAG")
    epoch = source_date_epoch()

    layer = layer_from_dir(args.rootfs, epoch)
    layer_gz = gzip_layer(layer, 6)
    env = args.env if any(e.startswith("PATH=") for e in args.env) else [PATH_ENV] + args.env
    config = {"Env": env, "WorkingDir": args.workdir}
    if args.entrypoint:
        config["Entrypoint"] = json.loads(args.entrypoint)
    if args.cmd:
        config["Cmd"] = json.loads(args.cmd)
    if args.user:
        config["User"] = args.user
    written = write_archive(args.out, epoch, image_config(epoch, config, digest(layer), "tools/image/oci_from_dir.py"),
                            layer_gz, repository, [tag])
    print(f"{args.name} {written.manifest_digest} {args.out} ({os.path.getsize(args.out)} bytes)")


if __name__ == "__main__":
    main()
