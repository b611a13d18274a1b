#!/usr/bin/python3
"""Packs a root filesystem directory (mmdebstrap's output) as the coach-training OCI image archive.

  assemble_training.py --rootfs DIR --out FILE --repository NAME --tag TAG [--alias-tag TAG]
                       --created-by TEXT [--label KEY=VALUE ...] [--extra-layer TAR=CREATED_BY ...]

Called by tools/image/build-training after mmdebstrap; see that script. The root filesystem is the
first layer; each --extra-layer (a plain tar that pack_layer.py wrote, its digest in TAR.sha256) goes
above it as it is. The first layer is reproducible:
entries sorted by path, every mtime SOURCE_DATE_EPOCH (else 0), numeric owners as in DIR, no user or
group names, no atime/ctime/xattrs, hard links kept, the contents of /dev, /proc, /sys, /run and /tmp
left out (their directories stay: a runtime mounts them), gzip without a name or timestamp, JSON
with sorted keys. Debian's .pyc files are hash-based (unchecked), as build-training compiles pip's:
mtimes do not matter to them. Because every file's mtime becomes the epoch, any timestamp-checked
.pyc gets the epoch as its source mtime (so it stays valid and Python never recompiles at import,
which a non-root user could not write anyway); one that did not match its source is dropped.

index.json names the image twice, REPOSITORY:TAG and REPOSITORY:ALIAS (same manifest), through
org.opencontainers.image.ref.name and io.containerd.image.name, so that `ctr images import` creates
both names. Prints the manifest digest and sizes.
"""

import argparse
import hashlib
import os
import stat
import struct
import subprocess
import sys
import tarfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oci_layout import MT_LAYER_TAR, ExtraLayer, image_config, source_date_epoch, write_archive  # noqa: E402

UID = 1000
USER = "coach"
WORKDIR = "/opt/coach"
ENV = [
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME=/tmp",  # writable whatever uid the pod runs as
    "LANG=C.UTF-8",
    # Open MPI's shared-memory transport: no cross-memory attach (ptrace), which containers lack.
    "OMPI_MCA_btl_vader_single_copy_mechanism=none",
]
CMD = ["/usr/bin/python3", "examples/pytorch/ddp_train.py"]
# Directories whose contents a runtime provides (mounts); the directories themselves are kept.
EMPTIED = ("dev", "proc", "sys", "run", "tmp")


def die(message):
    print(f"assemble_training: {message}", file=sys.stderr)
    sys.exit(1)


def fix_pycs(root, epoch):
    """Gives every timestamp-checked .pyc whose header matches its source the epoch as source mtime."""
    patched = dropped = hashed = 0
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if os.path.basename(dirpath) != "__pycache__":
            continue
        for name in sorted(filenames):
            if not name.endswith(".pyc"):
                continue
            path = os.path.join(dirpath, name)
            module = name.split(".")[0]
            source = os.path.join(os.path.dirname(dirpath), module + ".py")
            with open(path, "r+b") as f:
                header = f.read(16)
                keep = False
                if len(header) == 16 and os.path.isfile(source):
                    flags, mtime, size = struct.unpack("<III", header[4:16])
                    st = os.stat(source)
                    if flags & 1:
                        keep = True  # hash-based (what Debian's py3compile writes): independent of mtimes
                        hashed += 1
                    elif mtime == (int(st.st_mtime) & 0xFFFFFFFF) and size == (st.st_size & 0xFFFFFFFF):
                        f.seek(8)
                        f.write(struct.pack("<I", epoch & 0xFFFFFFFF))
                        keep = True
                        patched += 1
            if not keep:
                os.unlink(path)
                dropped += 1
    return patched, dropped, hashed


class HashingWriter:
    """A write-only file object that hashes what passes through it into another file object."""

    def __init__(self, sink):
        self.sink = sink
        self.sha = hashlib.sha256()
        self.size = 0

    def write(self, data):
        self.sha.update(data)
        self.size += len(data)
        self.sink.write(data)
        return len(data)

    def flush(self):
        self.sink.flush()


def write_layer(root, epoch, sink):
    """Writes the root filesystem as a tar to `sink`; returns the number of entries."""
    links = {}  # (dev, ino) -> first archive name, for hard links
    count = 0
    with tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT, bufsize=1 << 20) as tar:
        def add(path, arcname):
            nonlocal count
            st = os.lstat(path)
            info = tarfile.TarInfo(arcname)
            info.mtime = epoch
            info.uid, info.gid = st.st_uid, st.st_gid
            info.uname = info.gname = ""
            info.mode = stat.S_IMODE(st.st_mode)
            fileobj = None
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
            elif stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(path)
            elif stat.S_ISREG(st.st_mode):
                key = (st.st_dev, st.st_ino)
                if st.st_nlink > 1 and key in links:
                    info.type = tarfile.LNKTYPE
                    info.linkname = links[key]
                else:
                    links[key] = arcname
                    info.size = st.st_size
                    fileobj = open(path, "rb")
            else:
                die(f"{path}: not a directory, regular file or symbolic link")
            try:
                tar.addfile(info, fileobj)
            finally:
                if fileobj:
                    fileobj.close()
            count += 1

        # Every path first, then sorted as strings (as validate_oci.py wants; a parent still precedes
        # its children, being their prefix).
        paths = []

        def walk(directory, prefix):
            for name in os.listdir(directory):
                path = os.path.join(directory, name)
                arcname = prefix + name
                paths.append((arcname, path))
                if os.path.isdir(path) and not os.path.islink(path) and arcname not in EMPTIED:
                    walk(path, arcname + "/")

        walk(root, "")
        for arcname, path in sorted(paths):
            add(path, arcname)
    return count


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rootfs", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repository", required=True)
    ap.add_argument("--tag", required=True)
    ap.add_argument("--alias-tag", help="a second name for the same manifest")
    ap.add_argument("--created-by", required=True, help="the history entry's created_by")
    ap.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--gzip-level", type=int, default=6)
    ap.add_argument("--extra-layer", action="append", default=[], metavar="TAR=CREATED_BY")
    args = ap.parse_args()

    extra_layers = []
    for spec in args.extra_layer:
        path, sep, created_by = spec.partition("=")
        if not sep or not created_by:
            die(f"--extra-layer {spec}: want TAR=CREATED_BY")
        try:
            with open(path + ".sha256") as f:
                layer_digest = f.read().strip()
        except OSError as e:
            die(f"--extra-layer {path}: no digest ({e})")
        if not (layer_digest.startswith("sha256:") and len(layer_digest) == 71 and os.path.isfile(path)):
            die(f"--extra-layer {path}: not a layer with its digest in {path}.sha256")
        extra_layers.append(ExtraLayer(path, layer_digest, MT_LAYER_TAR, layer_digest, created_by))

    epoch = source_date_epoch()
    root = os.path.abspath(args.rootfs)
    for name in EMPTIED:
        if not os.path.isdir(os.path.join(root, name)):
            die(f"{root}/{name}: missing")

    patched, dropped, hashed = fix_pycs(root, epoch)

    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    layer_path = args.out + ".layer.tmp"
    # tar (here) -> gzip (another process, the other core) -> file; the tar is hashed on the way.
    with open(layer_path, "wb") as gz_out:
        gzip = subprocess.Popen(["gzip", "-n", f"-{args.gzip_level}", "-c"], stdin=subprocess.PIPE, stdout=gz_out)
        writer = HashingWriter(gzip.stdin)
        entries = write_layer(root, epoch, writer)
        gzip.stdin.close()
        if gzip.wait() != 0:
            die("gzip failed")
    diff_id = "sha256:" + writer.sha.hexdigest()
    layer_size = os.path.getsize(layer_path)

    labels = {}
    for spec in args.label:
        key, sep, value = spec.partition("=")
        if not sep:
            die(f"--label {spec}: want KEY=VALUE")
        labels[key] = value
    labels.setdefault("org.opencontainers.image.title", "coach-training")
    labels.setdefault("org.opencontainers.image.version", args.tag)
    config = image_config(epoch, {
        "User": f"{UID}:{UID}",
        "Env": ENV,
        # As pytorch-mnist-style images do, the image's own command trains (DDP, from the variables
        # a PyTorchJob gives it): a job whose containers name only the image runs it.
        "Cmd": CMD,
        "WorkingDir": WORKDIR,
        "Labels": labels,
    }, diff_id, args.created_by, extra_layers)
    tags = [args.tag] + ([args.alias_tag] if args.alias_tag and args.alias_tag != args.tag else [])
    references = [f"{args.repository}:{t}" for t in tags]
    written = write_archive(args.out, epoch, config, layer_path, args.repository, tags, extra_layers)
    os.unlink(layer_path)

    print(f"image:    {', '.join(references)}")
    print(f"layer:    {entries} entries, {writer.size} bytes, {layer_size} compressed; "
          f".pyc: {hashed} hash-based, {patched} given the epoch, {dropped} stale dropped")
    for x in extra_layers:
        print(f"layer:    {x.path} ({os.path.getsize(x.path)} bytes, {x.digest})")
    print(f"archive:  {args.out} ({os.path.getsize(args.out)} bytes)")
    print(f"manifest: {written.manifest_digest}")


if __name__ == "__main__":
    main()
