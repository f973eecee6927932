#!/usr/bin/python3
"""Fused against unfused: the same spec compiled with the fusions (default)
and with `--no-fusion`, run on the same parameters and inputs, forward and
backward (harness -b), must agree within float round-off.

For each spec (conformance.py's matrix, or `--examples`: examples/specs/*.toml)
and each (batch, seq[, enc_seq], threads) case, every output (y / logits,
loss) and every gradient (each parameter tensor of d_params, d_x, d_enc) is
compared: rel = max|fused - unfused| / max(max|unfused|, floor), bound
--rtol (1e-5). The floor is 1e-3 of the largest value of the whole buffer
(as conformance.py's GRAD_FLOOR): gradients that vanish identically (the key
bias) are rounding noise in both builds and are judged against it.

  test/Numerics/fusion_parity.py --tfc build/bin/tfc --runtime-lib build/lib \\
      --include runtime/include -j 2 [--examples] [--filter REGEX]

`--disable-fusion=...` style comparisons: `--fused-arg` adds tfc flags to
the fused build (e.g. `--fused-arg=--disable-fusion=loss-head`).
"""

import argparse
import concurrent.futures
import glob
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zlib

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np

from conformance import HARNESS, Runner, SpecCase, all_specs, run, tail
from oracle import Config, compute_layout

FLOOR = 1e-3
TINY = 1e-30
CASES = [(2, 17, 9, 2), (3, 5, 23, 0), (1, 1, 1, 1)]


class ExampleSpec:
    def __init__(self, path):
        with open(path) as f:
            self.toml = f.read()
        self.cfg = Config.from_string(self.toml)
        self.name = self.cfg.name
        self.max_batch = int(re.search(r"max_batch\s*=\s*(\d+)", self.toml).group(1)) \
            if "max_batch" in self.toml else 8


def build(args, spec, d, flags):
    os.makedirs(d, exist_ok=True)
    toml = os.path.join(d, "spec.toml")
    with open(toml, "w") as f:
        f.write(spec.toml)
    name = spec.cfg.name
    rc, out = run([args.tfc, toml, "-o", os.path.join(d, name + ".o")] + flags, args.timeout)
    if rc != 0:
        return f"tfc {' '.join(flags)} exited {rc}" + tail(out)
    rc, out = run(args.cc.split() + [
        "-O2", "-std=c11", "-I" + args.include, "-I" + d, f'-DTFC_HEADER="{name}.h"',
        f"-DTFC_NAME={name}", f"-DTFC_UNAME={name.upper()}", HARNESS,
        os.path.join(d, name + ".o"), "-L" + args.runtime_lib, "-ltfc_runtime",
        "-lpthread", "-lm", "-o", os.path.join(d, "harness")], args.timeout)
    return None if rc == 0 else f"cc exited {rc}" + tail(out)


def rel_errors(a, b, parts):
    """[(rel, name)] worst first; see the module docstring."""
    a = a.astype(np.float64).reshape(-1)
    b = b.astype(np.float64).reshape(-1)
    floor = max(FLOOR * (float(np.abs(b).max()) if b.size else 0.0), TINY)
    errs = []
    for name, offset, n in parts:
        x, y = a[offset:offset + n], b[offset:offset + n]
        if n == 0:
            continue
        if not np.all(np.isfinite(x)):
            errs.append((math.inf, name))
            continue
        errs.append((float(np.abs(x - y).max()) / max(float(np.abs(y).max()), floor), name))
    return sorted(errs, key=lambda e: -e[0])


def check_spec(args, spec):
    lines, worst, failed = [], 0.0, 0
    root = os.path.join(args.work, spec.name)
    shutil.rmtree(root, ignore_errors=True)
    fused, unfused = os.path.join(root, "fused"), os.path.join(root, "unfused")
    for d, flags in ((fused, args.fused_arg), (unfused, ["--no-fusion"])):
        err = build(args, spec, d, flags)
        if err:
            return [f"FAIL {spec.name} build {err}"], math.inf, 1
    cfg = spec.cfg
    layout, _ = compute_layout(cfg)
    runner = Runner(args, root)
    rng = np.random.default_rng([zlib.crc32(spec.name.encode()), 3])
    for b, s, t, th in CASES:
        b, s, t = min(b, spec.max_batch), min(s, cfg.max_seq), min(t, cfg.max_seq)
        case = f"b={b} s={s}" + (f" enc={t}" if cfg.cross else "") + f" threads={th}"
        dirs = [os.path.join(fused, case.replace(" ", "_")),
                os.path.join(unfused, case.replace(" ", "_"))]
        runner.write_inputs(spec, dirs[0], rng, b, s, t, grad=True)
        outs = []
        for k, d in enumerate(dirs):
            if k == 1:  # the same inputs and parameters
                shutil.copytree(dirs[0], d, dirs_exist_ok=True)
            cmd = [os.path.join(os.path.dirname(d), "harness"), "-b", d, str(b), str(s),
                   str(t if cfg.cross else 0), str(th), "5"]
            rc, out = run(cmd, args.timeout)
            if rc != 0:
                return lines + [f"FAIL {spec.name} {case} harness exited {rc}" + tail(out)], \
                    math.inf, failed + 1
            outs.append(out)
        msgs, bad = [], []
        files = cfg.output_names() + ["d_params"] + \
            ([] if cfg.has_embedding else ["d_x"]) + (["d_enc"] if cfg.cross else [])
        for f in files:
            a, c = (np.fromfile(os.path.join(d, f + ".bin"), dtype=np.float32) for d in dirs)
            parts = [(n, o, math.prod(sh)) for n, o, sh in layout] if f == "d_params" \
                else [(f, 0, c.size)]
            errs = rel_errors(a, c, parts)
            rel, where = errs[0]
            worst = max(worst, rel)
            msgs.append(f"{f}: {rel:.2g}" + (f" ({where})" if f == "d_params" else ""))
            bad += [e for e in errs if not e[0] <= args.rtol]
        ok = not bad
        failed += not ok
        lines.append(f"{'PASS' if ok else 'FAIL'} {spec.name} {case} " + "; ".join(msgs) +
                     ("" if ok else " > bound in " + ", ".join(
                         f"{n} {r:.3g}" for r, n in bad[:4])))
    return lines, worst, failed


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tfc", required=True)
    p.add_argument("--runtime-lib", required=True)
    p.add_argument("--include", required=True)
    p.add_argument("--cc", default="cc")
    p.add_argument("--fused-arg", action="append", default=[])
    p.add_argument("--examples", action="store_true",
                   help="examples/specs/*.toml instead of conformance's matrix")
    p.add_argument("--filter", default="")
    p.add_argument("--rtol", type=float, default=1e-5)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("-j", "--jobs", type=int, default=2)
    p.add_argument("--keep", default=None)
    args = p.parse_args()
    if args.examples:
        root = os.path.dirname(os.path.dirname(HERE))
        specs = [ExampleSpec(f) for f in sorted(glob.glob(
            os.path.join(root, "examples", "specs", "*.toml")))]
    else:
        specs = all_specs()
    specs = [s for s in specs if re.search(args.filter, s.name)]
    args.work = args.keep or tempfile.mkdtemp(prefix="tfc-parity-")
    os.makedirs(args.work, exist_ok=True)
    total_failed, total, worst = 0, 0, (0.0, "")
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for spec, (lines, w, failed) in zip(specs, pool.map(
                lambda s: check_spec(args, s), specs)):
            print("\n".join(lines), flush=True)
            total += len(lines)
            total_failed += failed
            if w > worst[0]:
                worst = (w, spec.name)
    print(f"worst: {worst[0]:.3g} ({worst[1]})")
    print(f"{total - total_failed} passed, {total_failed} failed")
    if not args.keep:
        shutil.rmtree(args.work, ignore_errors=True)
    return 1 if total_failed else 0


if __name__ == "__main__":
    sys.exit(main())
