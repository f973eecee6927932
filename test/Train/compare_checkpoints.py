#!/usr/bin/env python3
"""Compares the parameters of two tfc checkpoints (safetensors, F32).

    compare_checkpoints.py A B --atol X [--prefix params.] [--only REGEX]
                           [--skip REGEX]

Prints the largest absolute and relative difference over every tensor whose
name starts with the prefix, and the tensor it is in; exits 1 when the
largest absolute difference is over X (or the files hold other tensors).
Plain Python and numpy: the file is an 8-byte header size, a JSON header,
then the data (docs/abi.md, "Checkpoints").
"""
import argparse
import json
import re
import struct
import sys

import numpy as np


def tensors(path, prefix):
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or not name.startswith(prefix):
            continue
        if info["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {info['dtype']}, not F32")
        lo, hi = info["data_offsets"]
        out[name] = np.frombuffer(data[base + lo:base + hi], dtype="<f4")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--atol", type=float, required=True)
    ap.add_argument("--prefix", default="params.")
    ap.add_argument("--only", help="compare only tensors matching this")
    ap.add_argument("--skip", help="leave out tensors matching this")
    args = ap.parse_args()
    a, b = tensors(args.a, args.prefix), tensors(args.b, args.prefix)
    if a.keys() != b.keys() or not a:
        sys.exit(f"the checkpoints hold other tensors ({len(a)} vs {len(b)})")
    names = [n for n in a if (not args.only or re.search(args.only, n))
             and not (args.skip and re.search(args.skip, n))]
    worst_abs, worst_rel, where = 0.0, 0.0, ""
    for name in names:
        d = np.abs(a[name].astype(np.float64) - b[name].astype(np.float64))
        i = int(np.argmax(d))
        if d[i] > worst_abs:
            worst_abs, where = float(d[i]), name
        scale = np.maximum(np.abs(a[name].astype(np.float64)), 1e-3)
        worst_rel = max(worst_rel, float(np.max(d / scale)))
    ok = worst_abs <= args.atol
    print(f"{len(names)} tensors: max |a - b| = {worst_abs:.3g} ({where}), "
          f"max relative {worst_rel:.3g}: {'within' if ok else 'OVER'} "
          f"{args.atol:g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
