#!/usr/bin/python3
"""Decoding with a KV cache against the full forward, for every causal spec.

The specs: the conformance matrix's causal specs without cross-attention
(conformance.all_specs()) and the example specs of --examples that are
causal (examples/specs/*.toml; those above --max-params parameters are
listed as skipped). For each this script compiles the spec with tfc,
compiles harness/decode.c against it and runs it at a few
(batch, seq, threads): a ragged prefill, then decode one token per sequence
per call, every output compared with NAME_forward's at the same position
within --tol relative to max(1, |ref|), then the entry points' argument
checks (harness/decode.c says which). Sliding-window specs run past the
window, so the ring of window slots wraps.

With --cuda every build targets CUDA and harness/decode.c keeps its arrays
and the cache on the device (without a GPU: tfc-emu as --tfc and
TFC_CUDA_DRIVER naming libtfc_cuda_emu.so, the CPU emulator of the driver).

Prints one line per case and `N passed, M failed`; exits 1 on a failure.

  test/Numerics/decode_check.py --tfc build/bin/tfc --runtime-lib build/lib \\
      --include runtime/include --examples examples/specs -j 2
"""

import argparse
import concurrent.futures
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from conformance import all_specs  # noqa: E402
from oracle import Config  # noqa: E402

HARNESS = os.path.join(HERE, "harness", "decode.c")


def cases_for(cfg, max_batch):
    """(batch, seq, threads), clamped to the spec: one position (a prefill
    of 1, then a rewind to it), seqs that are no multiple of 4, 8 or 16,
    and past a sliding window."""
    cases = [(1, 1, 0), (3, 20, 2), (2, 37, 0)]
    if cfg.sliding_window:
        cases.append((2, 3 * cfg.sliding_window + 4, 2))
    out = []
    for b, s, t in cases:
        c = (min(b, max_batch), min(s, cfg.max_seq), t)
        if c not in out:
            out.append(c)
    return out


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=timeout)
        return p.returncode, p.stdout
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout} s: {' '.join(cmd)}"


def check_spec(args, work, name, toml_text, cfg, max_batch):
    d = os.path.join(work, name)
    os.makedirs(d, exist_ok=True)
    spec = os.path.join(d, name + ".toml")
    with open(spec, "w") as f:
        f.write(toml_text)
    lines, ok = [], True
    rc, out = run([args.tfc, spec, "-o", os.path.join(d, name + ".o")] + args.tfc_arg,
                  args.timeout)
    if rc != 0:
        return False, [f"FAIL {name}: tfc exited {rc}: {out.strip()[-600:]}"]
    with open(os.path.join(d, name + ".h")) as f:
        header = f.read()
    m = re.search(r"#define \w+_PARAM_COUNT (\d+)", header)
    if m and int(m.group(1)) > args.max_params:
        return True, [f"skip {name}: {int(m.group(1))} parameters > --max-params"]
    cc = args.cc.split() + [
        "-O2", "-std=c11", "-Werror=implicit-function-declaration", "-I" + args.include,
        "-I" + d, f'-DTFC_HEADER="{name}.h"', f"-DTFC_NAME={name}",
        f"-DTFC_UNAME={name.upper()}", HARNESS, os.path.join(d, name + ".o"),
        "-L" + args.runtime_lib, "-ltfc_runtime", "-lpthread", "-lm",
        "-o", os.path.join(d, "decode")] + args.ldflags.split()
    if args.cuda:
        cc += ["-DTFC_HARNESS_CUDA", "-ldl"]
    rc, out = run(cc, args.timeout)
    if rc != 0:
        return False, [f"FAIL {name}: cc exited {rc}: {out.strip()[-600:]}"]
    for b, s, t in cases_for(cfg, max_batch):
        rc, out = run([os.path.join(d, "decode"), str(b), str(s), str(t), "1",
                       repr(args.tol)], args.timeout)
        case = f"{name} batch {b} seq {s} threads {t}"
        if rc != 0:
            ok = False
            lines.append(f"FAIL {case}: exit {rc}: {out.strip()[-800:]}")
        else:
            m = re.search(r"prefill error (\S+), decode error (\S+)", out)
            lines.append(f"ok   {case}: prefill {m.group(1)}, decode {m.group(2)}"
                         if m else f"ok   {case}")
    return ok, lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--tfc", default="tfc")
    ap.add_argument("--tfc-arg", action="append", default=[],
                    help="an extra argument for tfc (repeatable)")
    ap.add_argument("--runtime-lib", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--examples", help="a directory of example specs")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--ldflags", default="")
    ap.add_argument("--filter", metavar="REGEX", help="only specs whose name matches")
    ap.add_argument("--pairwise", action="store_true",
                    help="of conformance.py's block matrix only the pairwise "
                    "covering blocks (conformance.py --pairwise)")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    ap.add_argument("--cuda", action="store_true",
                    help="compile with --target=cuda and run on the GPU (or the "
                    "emulator TFC_CUDA_DRIVER names)")
    ap.add_argument("--tol", type=float, default=1e-5)
    ap.add_argument("--max-params", type=int, default=200_000_000)
    ap.add_argument("--timeout", type=int, default=600)
    args = ap.parse_args(argv)
    if args.cuda:
        args.tfc_arg = ["--target=cuda"] + args.tfc_arg

    specs = []  # (name, toml, cfg, max_batch)
    for s in all_specs(pairwise=args.pairwise):
        if s.cfg.mask == "causal" and not s.cfg.cross:
            specs.append((s.name, s.toml, s.cfg, s.max_batch))
    if args.examples:
        for path in sorted(glob.glob(os.path.join(args.examples, "*.toml"))):
            with open(path) as f:
                text = f.read()
            cfg = Config.from_string(text)
            if cfg.mask != "causal" or cfg.cross:
                continue
            name = "ex_" + os.path.splitext(os.path.basename(path))[0]
            text = re.sub(r'^name = "[^"]*"', f'name = "{name}"', text, count=1,
                          flags=re.M)
            specs.append((name, text, Config.from_string(text), cfg.max_batch))
    if args.filter:
        specs = [s for s in specs if re.search(args.filter, s[0])]

    work = args.keep or tempfile.mkdtemp(prefix="tfc-decode-")
    os.makedirs(work, exist_ok=True)
    passed = failed = 0
    try:
        with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(check_spec, args, work, *s) for s in specs]
            for fut in futures:
                ok, lines = fut.result()
                for line in lines:
                    print(line, flush=True)
                passed += ok
                failed += not ok
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
