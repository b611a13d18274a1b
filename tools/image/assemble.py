#!/usr/bin/python3
"""Assembles the coach-operator container image as an OCI image layout archive.

No container engine: the root filesystem is written as one tar layer straight from the built
binaries, the shared libraries they load (as `ldd` resolves them on this Debian host) and a few
files under /etc. Reproducible: entries sorted, mtimes fixed (SOURCE_DATE_EPOCH, else 0), owners
numeric (0:0; only /home/nonroot belongs to the image's user), gzip without a name or timestamp, JSON
with sorted keys; the same inputs give the same digests.

Called by tools/image/build, which builds the binaries first; see that script for the flags.
"""

import argparse
import io
import os
import re
import stat
import struct
import subprocess
import sys
import tarfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from oci_layout import digest, gzip_layer, image_config, source_date_epoch, write_archive  # noqa: E402

UID = 65532
USER = "nonroot"
PATH_ENV = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BIN_DIR = "/usr/local/bin"
ENTRYPOINT = BIN_DIR + "/coach-operator"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"

PASSWD = f"root:x:0:0:root:/root:/sbin/nologin\n{USER}:x:{UID}:{UID}:{USER}:/home/{USER}:/sbin/nologin\n"
GROUP = f"root:x:0:\n{USER}:x:{UID}:\n"
# glibc 2.34+ has the files and dns services built in: no libnss_* to ship.
NSSWITCH = "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\n" \
           "protocols: files\nservices: files\nethers: files\nrpc: files\n"


def die(message):
    print(f"tools/image: {message}", file=sys.stderr)
    sys.exit(1)


class Rootfs:
    """The layer's entries by absolute path: ("dir"|"file"|"symlink", mode, payload, uid)."""

    def __init__(self):
        self.entries = {}

    def _put(self, path, kind, mode, payload=None, uid=0):
        path = os.path.normpath(path)
        old = self.entries.get(path)
        if old is not None:
            if old[0] != kind or (kind != "dir" and old[2] != payload):
                die(f"{path}: added twice, differently")
            return
        self.entries[path] = (kind, mode, payload, uid)

    def parents(self, path):
        parent = os.path.dirname(os.path.normpath(path))
        if parent != "/" and parent not in self.entries:
            self.add_host_path(parent)

    def add_dir(self, path, mode=0o755, uid=0):
        """A directory with this mode and owner, also where a parent of an earlier entry made one."""
        self.parents(path)
        path = os.path.normpath(path)
        old = self.entries.get(path)
        if old is not None and old[0] != "dir":
            die(f"{path}: added twice, differently")
        self.entries[path] = ("dir", mode, None, uid)

    def add_file(self, path, data, mode):
        self.parents(path)
        self._put(path, "file", mode, data)

    def add_host_path(self, path, depth=0):
        """Copies a host path to the same path, keeping every symlink on the way (/lib -> usr/lib)."""
        if depth > 40:
            die(f"{path}: too many levels of symbolic links")
        parts = os.path.normpath(path).strip("/").split("/")
        current = ""
        for i, part in enumerate(parts):
            current += "/" + part
            try:
                st = os.lstat(current)
            except OSError as e:
                die(f"{current}: {e.strerror}")
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(current)
                self._put(current, "symlink", 0o777, target)
                base = target if target.startswith("/") else os.path.join(os.path.dirname(current), target)
                self.add_host_path(os.path.join(base, *parts[i + 1:]), depth + 1)
                return
            last = i == len(parts) - 1
            if stat.S_ISDIR(st.st_mode):
                self._put(current, "dir", 0o755)
            elif last and stat.S_ISREG(st.st_mode):
                with open(current, "rb") as f:
                    # Readable by everyone; executables and libraries keep their execute bits.
                    self._put(current, "file", (st.st_mode & 0o755) | 0o444, f.read())
            else:
                die(f"{current}: not a directory, regular file or symbolic link")

    def layer_tar(self, mtime):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path in sorted(self.entries):
                kind, mode, payload, uid = self.entries[path]
                info = tarfile.TarInfo(path.lstrip("/"))
                info.mtime = mtime
                info.uid = info.gid = uid
                info.uname = info.gname = ""
                info.mode = mode
                if kind == "dir":
                    info.type = tarfile.DIRTYPE
                    tar.addfile(info)
                elif kind == "symlink":
                    info.type = tarfile.SYMTYPE
                    info.linkname = payload
                    tar.addfile(info)
                else:
                    info.size = len(payload)
                    tar.addfile(info, io.BytesIO(payload))
        return buf.getvalue()


def is_static(binary):
    """Whether `binary` is an ELF64 executable without a program interpreter (PT_INTERP): linked
    statically, it loads no shared object (coach-replica-shim is, for its start-up time)."""
    with open(binary, "rb") as f:
        head = f.read(64)
        if len(head) < 64 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            die(f"{binary}: not a little-endian ELF64 file")
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return all(struct.unpack_from("<I", table, i * phentsize)[0] != 3 for i in range(phnum))


def shared_objects(binary):
    """The loader and every shared object `ldd` resolves for `binary`, by the path ldd names;
    none for a static executable."""
    if is_static(binary):
        return []
    out = subprocess.run(["ldd", binary], capture_output=True, text=True)
    if out.returncode != 0:
        die(f"ldd {binary}: {out.stderr.strip() or out.stdout.strip()}")
    paths = []
    for line in out.stdout.splitlines():
        line = line.strip()
        if "not found" in line:
            die(f"ldd {binary}: {line}")
        m = re.match(r"^\S+ => (/\S+) \(0x[0-9a-f]+\)$", line) or re.match(r"^(/\S+) \(0x[0-9a-f]+\)$", line)
        if m:
            paths.append(m.group(1))
        elif not re.match(r"^linux-vdso\.so\.\d+ \(0x[0-9a-f]+\)$", line):
            die(f"ldd {binary}: cannot read the line {line!r}")
    if not any(re.search(r"/ld-linux[^/]*\.so", p) for p in paths):
        die(f"ldd {binary}: no dynamic loader (not a dynamically linked executable?)")
    return paths


def copyright_files(paths):
    """/usr/share/doc/PKG/copyright of the Debian packages owning `paths` (their licences travel with them)."""
    candidates = sorted(set(paths) | {os.path.realpath(p) for p in paths})
    out = subprocess.run(["dpkg", "-S"] + candidates, capture_output=True, text=True)
    packages = set()
    for line in out.stdout.splitlines():
        owners, _, _ = line.partition(": ")
        for owner in owners.split(", "):
            packages.add(owner.split(":")[0])
    files = []
    for package in sorted(packages):
        doc = f"/usr/share/doc/{package}/copyright"
        if os.path.exists(doc):
            files.append(doc)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--binary", action="append", required=True, metavar="NAME=PATH",
                    help=f"an executable to put at {BIN_DIR}/NAME")
    ap.add_argument("--out", required=True, help="OCI image layout archive to write")
    ap.add_argument("--tag", required=True)
    ap.add_argument("--repository", required=True, help="image name without tag, for the loaders' names")
    ap.add_argument("--revision", required=True, help="VCS revision (label org.opencontainers.image.revision)")
    ap.add_argument("--source", required=True, help="source URL (label org.opencontainers.image.source)")
    ap.add_argument("--layer-tar", help="also write the uncompressed layer here (the Dockerfile unpacks it)")
    args = ap.parse_args()

    epoch = source_date_epoch()

    rootfs = Rootfs()
    libraries = []
    for spec in args.binary:
        name, _, path = spec.partition("=")
        if not name or not path:
            die(f"--binary {spec}: want NAME=PATH")
        with open(path, "rb") as f:
            rootfs.add_file(f"{BIN_DIR}/{name}", f.read(), 0o755)
        libraries += shared_objects(path)
    for lib in sorted(set(libraries)):
        rootfs.add_host_path(lib)
    for doc in copyright_files(libraries):
        rootfs.add_host_path(doc)
    if not os.path.isfile(CA_BUNDLE):
        die(f"{CA_BUNDLE}: missing (apt-get install ca-certificates)")
    with open(CA_BUNDLE, "rb") as f:
        rootfs.add_file(CA_BUNDLE, f.read(), 0o644)
    rootfs.add_file("/etc/passwd", PASSWD.encode(), 0o644)
    rootfs.add_file("/etc/group", GROUP.encode(), 0o644)
    rootfs.add_file("/etc/nsswitch.conf", NSSWITCH.encode(), 0o644)
    rootfs.add_dir("/tmp", 0o1777)
    rootfs.add_dir("/root", 0o700)
    rootfs.add_dir("/home", 0o755)
    rootfs.add_dir(f"/home/{USER}", 0o700, uid=UID)
    rootfs.add_dir("/var/lib/coach", 0o755)  # the chart's --state-dir (an emptyDir mounted there)

    layer = rootfs.layer_tar(epoch)
    if args.layer_tar:
        with open(args.layer_tar, "wb") as f:
            f.write(layer)
    layer_gz = gzip_layer(layer, 9)
    config = image_config(epoch, {
        "User": f"{UID}:{UID}",
        "Entrypoint": [ENTRYPOINT],
        "Env": [PATH_ENV],
        "WorkingDir": "/",
        "ExposedPorts": {"7450/tcp": {}, "7451/tcp": {}},
        "Labels": {
            "org.opencontainers.image.source": args.source,
            "org.opencontainers.image.version": args.tag,
            "org.opencontainers.image.revision": args.revision,
            "org.opencontainers.image.title": "coach-operator",
        },
    }, digest(layer), "tools/image/build")
    reference = f"{args.repository}:{args.tag}"
    written = write_archive(args.out, epoch, config, layer_gz, args.repository, [args.tag])

    print(f"image:    {reference} ({len(rootfs.entries)} files, layer {len(layer)} bytes, "
          f"{len(layer_gz)} compressed)")
    print(f"archive:  {args.out} ({os.path.getsize(args.out)} bytes)")
    print(f"manifest: {written.manifest_digest} ({written.manifest_size} bytes)")
    print(f"size:     {written.config_size + len(layer_gz) + written.manifest_size} bytes (manifest + config + layer)")


if __name__ == "__main__":
    main()
