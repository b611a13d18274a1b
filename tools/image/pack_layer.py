#!/usr/bin/python3
"""Packs a directory as one uncompressed, reproducible image layer (a plain tar).

  pack_layer.py --root DIR --out FILE

The entries as assemble_training.py writes the coach-training image's first layer (sorted, every
mtime SOURCE_DATE_EPOCH, numeric owners, no names). Writes FILE through FILE.tmp and FILE.sha256
(the tar's digest, "sha256:<hex>", which is both the layer's digest and its diff_id); prints that
digest, the size and the number of entries.
"""

import argparse
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from assemble_training import HashingWriter, write_layer  # noqa: E402
from oci_layout import source_date_epoch  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if not os.path.isdir(args.root):
        sys.exit(f"pack_layer: --root {args.root}: not a directory")
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        writer = HashingWriter(f)
        entries = write_layer(os.path.abspath(args.root), source_date_epoch(), writer)
    digest = "sha256:" + writer.sha.hexdigest()
    with open(args.out + ".sha256.tmp", "w") as f:
        f.write(digest + "\n")
    os.replace(tmp, args.out)
    os.replace(args.out + ".sha256.tmp", args.out + ".sha256")
    print(f"{digest} {writer.size} {entries}")


if __name__ == "__main__":
    main()
