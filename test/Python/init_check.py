"""The compiled NAME_init against the spec's initialisation as docs/abi.md
states it, read from the spec itself (not from tfc's layout): for each
spec, every parameter tensor's values after m.init(seed) must look like a
draw from its distribution.

- Matrices by init.scheme: "xavier" uniform in +-sqrt(6 / (in + out)) (the
  largest |value| within 2% below the bound, never above; std bound /
  sqrt(3) within 6%), "normal" N(0, init.std) (std within 6%).
- The token and learned position tables by init.embedding /
  init.embedding_std (default: scheme and std); a tied head is the token
  table; an untied head.weight follows the scheme.
- Norm weights are exactly 1, biases exactly 0.

    init_check.py --cache DIR SPEC...
"""
import argparse
import math
import os
import sys
import tomllib

import numpy as np

here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
import tfc  # noqa: E402


def expected(spec, name, shape):
    """("uniform", bound) | ("normal", std) | ("ones",) | ("zeros",)."""
    init = spec.get("init", {})
    scheme, std = init.get("scheme", "xavier"), init.get("std", 0.02)
    if name.endswith(".bias"):
        return ("zeros",)
    if "norm." in name:
        return ("ones",)
    if name in ("embed.tokens", "embed.positions"):
        if "embedding" in init:
            scheme, std = init["embedding"], init.get("embedding_std", 0.02)
    if scheme == "xavier":
        return ("uniform", math.sqrt(6 / (shape[0] + shape[1])))
    return ("normal", std)


def check_tensor(name, values, want):
    v = values.astype(np.float64).ravel()
    if want[0] in ("ones", "zeros"):
        target = 1.0 if want[0] == "ones" else 0.0
        return bool(np.all(v == target)), f"{want[0]}"
    sd, mean = float(v.std()), float(v.mean())
    n = v.size
    if want[0] == "uniform":
        bound = want[1]
        top = float(np.abs(v).max())
        ok = top <= bound * (1 + 1e-6) and top >= bound * (1 - 0.02 - 4 / n)
        ok &= abs(sd / (bound / math.sqrt(3)) - 1) < 0.06 + 3 / math.sqrt(n)
        ok &= abs(mean) < 4 * bound / math.sqrt(3 * n)
        return ok, f"uniform +-{bound:.4g}: max|v| {top:.4g}, std {sd:.4g}"
    std = want[1]
    ok = abs(sd / std - 1) < 0.06 + 3 / math.sqrt(n)
    ok &= abs(mean) < 4 * std / math.sqrt(n)
    return ok, f"normal std {std:.4g}: std {sd:.4g}, mean {mean:.2g}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("specs", nargs="+")
    args = ap.parse_args()
    failed = 0
    for path in args.specs:
        with open(path, "rb") as f:
            spec = tomllib.load(f)
        m = tfc.compile(path, cache_dir=args.cache, threads=1)
        m.init(seed=11)
        kinds = {}
        for name, values in m.tensors.items():
            base = name.split(".", 2)[2] if name.startswith("blocks.") else name
            want = expected(spec, base, values.shape)
            ok, detail = check_tensor(name, values, want)
            kinds[want[0]] = kinds.get(want[0], 0) + 1
            if not ok:
                failed += 1
                print(f"FAIL {m.name} {name}: {detail}")
            elif name in ("embed.tokens", "blocks.0.attn.wq.weight", "head.weight"):
                print(f"{m.name} {name}: {detail}")
        print(f"{m.name}: {len(m.tensors)} tensors,",
              ", ".join(f"{k} {kinds[k]}" for k in sorted(kinds)))
    print(f"{'FAILED' if failed else 'all match'}: {failed} tensors off")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
