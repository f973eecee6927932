"""python/tfc against the independent PyTorch oracle (test/Numerics/
oracle.py): for each spec given, tfc.compile, init, forward and backward on
random inputs, then the oracle in float64 on the same parameters: outputs
within 1e-4 relative to the largest, every parameter gradient tensor and
input gradient within 1e-3 of its largest element (conformance.py's
bounds); a language model's prefill + decode against its forward.

    binding_check.py --cache DIR SPEC...
"""
import argparse
import os
import sys

import numpy as np
import torch

here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
sys.path.insert(0, os.path.join(here, "..", "Numerics"))
import tfc  # noqa: E402
from oracle import Oracle  # noqa: E402


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def decode_vs_forward(m, rng):
    """A prefill of 4 tokens, then one decoded token a call: each position's
    logits against the full forward's (docs/abi.md: within 1e-5 relative
    to max(1, |ref|))."""
    tokens = rng.integers(0, m.vocab, (2, 8)).astype(np.int32)
    full = m.forward(tokens=tokens, targets=tokens)["logits"]
    cache = m.kv_cache(2, 8)
    got = [m.prefill(cache, tokens[:, :4])]
    for p in range(4, 8):
        got.append(m.decode(cache, tokens[:, p], np.full(2, p, np.int32))[:, None])
    got = np.concatenate(got, axis=1)
    return float(np.max(np.abs(got - full) / np.maximum(1, np.abs(full))))


def check(spec, cache, rng):
    m = tfc.compile(spec, cache_dir=cache, threads=1)
    oracle = Oracle.from_file(spec)
    m.init(seed=3)
    oracle.load_flat(m.params)
    batch, seq = min(2, m.max_batch), min(7, m.max_seq)
    inputs, torch_inputs = {}, {}
    if m.has_embedding:
        tokens = rng.integers(0, m.vocab, (batch, seq)).astype(np.int32)
        inputs["tokens"], inp = tokens, torch.tensor(tokens, dtype=torch.long)
    else:
        x = rng.standard_normal((batch, seq, m.d_model)).astype(np.float32)
        inputs["x"] = x
        inp = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    if m.has_loss:
        targets = rng.integers(-1, m.vocab, (batch, seq)).astype(np.int32)
        inputs["targets"], torch_inputs["targets"] = targets, torch.tensor(targets)
    out = m.forward(**inputs)
    ref = oracle(inp, **torch_inputs)
    worst = {}
    if m.has_loss:
        worst["loss"] = rel(out["loss"], ref[1].item())
        ref[1].backward()
        m.zero_grad()
        grads = m.backward()
    else:
        name = "logits" if m.has_head else "y"
        worst[name] = rel(out[name], ref[0].detach().numpy())
        seed = rng.standard_normal(out[name].shape).astype(np.float32)
        ref[0].backward(torch.tensor(seed, dtype=torch.float64))
        m.zero_grad()
        grads = m.backward(**{"d_" + name: seed})
        if not m.has_embedding:
            worst["d_x"] = rel(grads["d_x"], inp.grad.numpy())
    expected = oracle.flat_grad()
    for name, view in m.tensors.items():
        lo = view.ctypes.data - m.params.ctypes.data
        g = m.grads[lo // 4:lo // 4 + view.size]
        e = np.asarray(expected[lo // 4:lo // 4 + view.size])
        if np.max(np.abs(e)) > 1e-12:
            worst[name] = max(worst.get(name, 0), rel(g, e))
    if m.has_embedding and m.kv_cache_available():
        worst["decode"] = decode_vs_forward(m, rng)
    bound = {k: (1e-4 if k in ("loss", "logits", "y") else 1e-5 if k == "decode" else 1e-3)
             for k in worst}
    bad = [f"{k} {v:.2e} > {bound[k]:.0e}" for k, v in worst.items() if v > bound[k]]
    print(f"{m.name}: {len(worst)} checks, worst {max(worst.values()):.2e}"
          + ("" if not bad else ": FAIL " + "; ".join(bad)))
    return not bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache", required=True)
    ap.add_argument("specs", nargs="+")
    a = ap.parse_args()
    rng = np.random.default_rng(11)
    ok = [check(s, a.cache, rng) for s in a.specs]
    print(f"{sum(ok)} passed, {len(ok) - sum(ok)} failed")
    return 0 if all(ok) else 1


if __name__ == "__main__":
    sys.exit(main())
