"""Checks python/tfc/_abi.py against tfc/runtime.h: writes a C program
that prints sizeof and every field's offsetof of each mirrored struct,
compiles it with the header, and compares with ctypes' layout.

    abi_layout.py --cc CC --include DIR --work DIR
"""
import argparse
import ctypes
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from tfc import _abi  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cc", default="cc")
    ap.add_argument("--include", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    lines = ["#include <stddef.h>", "#include <stdio.h>", '#include "tfc/runtime.h"',
             "int main(void) {"]
    expected = []
    for struct, c_name in _abi.LAYOUT:
        lines.append(f'  printf("{c_name} %zu\\n", sizeof({c_name}));')
        expected.append(f"{c_name} {ctypes.sizeof(struct)}")
        for field, _ in struct._fields_:
            lines.append(f'  printf("{c_name}.{field} %zu\\n", offsetof({c_name}, {field}));')
            expected.append(f"{c_name}.{field} {getattr(struct, field).offset}")
    checks = [("TFC_MODEL_VERSION", _abi.MODEL_VERSION), ("TFC_MAX_ARRAY_RANK", _abi.MAX_ARRAY_RANK),
              ("TFC_MAX_PARAM_RANK", _abi.MAX_PARAM_RANK),
              ("TFC_DIM_BATCH", _abi.DIM_BATCH), ("TFC_DIM_SEQ", _abi.DIM_SEQ),
              ("TFC_DIM_ENC_SEQ", _abi.DIM_ENC_SEQ), ("TFC_DTYPE_F32", _abi.DTYPE_F32),
              ("TFC_DTYPE_I32", _abi.DTYPE_I32), ("TFC_DTYPE_OPAQUE", _abi.DTYPE_OPAQUE),
              ("TFC_ACCESS_READ", _abi.ACCESS_READ), ("TFC_ACCESS_WRITE", _abi.ACCESS_WRITE),
              ("TFC_ACCESS_ACCUMULATE", _abi.ACCESS_ACCUMULATE), ("TFC_DEVICE_CPU", _abi.DEVICE_CPU),
              ("TFC_DEVICE_CUDA", _abi.DEVICE_CUDA), ("TFC_OK", _abi.OK)]
    for name, value in checks:
        lines.append(f'  printf("{name} %lld\\n", (long long)({name}));')
        expected.append(f"{name} {value}")
    lines += ["  return 0;", "}"]
    os.makedirs(a.work, exist_ok=True)
    src, exe = os.path.join(a.work, "layout.c"), os.path.join(a.work, "layout")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    subprocess.run([a.cc, "-std=c11", "-I", a.include, src, "-o", exe], check=True)
    got = subprocess.run([exe], capture_output=True, text=True, check=True).stdout.split("\n")
    bad = [f"{e} (C: {g})" for e, g in zip(expected, got) if e != g]
    for b in bad:
        print("MISMATCH", b)
    print(f"{len(expected)} layout facts, {len(bad)} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
