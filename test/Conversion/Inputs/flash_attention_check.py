"""Checks the models of flash_attention.mlir, compiled with and without
-tfc-fuse-attention, against attention in float64 numpy and against each
other.

    flash_attention_check.py FUSED_BINARY UNFUSED_BINARY WORKDIR

For every case (model, batch, seq s, key length t) it writes random q, k, v
and dy, runs both binaries (flash_attention_main.c: forward and backward,
1 and 3 threads bit for bit) and compares y, dq, dk and dv:
  - each with the float64 reference: max|ours - ref| <= TOL * max|ref|;
  - fused with unfused: max|fused - unfused| <= TOL * max|unfused|;
where max|.| is at least FLOOR times the largest magnitude of the case's four
references: at s = t = 1 the softmax is constant and the exact dq and dk are
0, which float32 leaves as rounding noise of dP - rowsum(dO * O).
Prints one line per case and `failures: N`."""

import os
import subprocess
import sys

import numpy as np

TOL = 1e-5
FLOOR = 0.1

# name: heads, dh, mask, scale; as in flash_attention.mlir. The merged_*
# models read and write [b, s, h * dh].
MODELS = {
    "causal_d5": (3, 5, "causal", 0.4472135954999579),
    "cross_d37": (2, 37, "bidirectional", 0.3),
    "causal_d64": (2, 64, "causal", 0.125),
    "causal_ts_d16": (1, 16, "causal", 0.25),
    "bidir_d1": (2, 1, "bidirectional", 1.0),
    "merged_causal_d5": (3, 5, "causal", 0.4472135954999579),
    "merged_cross_d37": (2, 37, "bidirectional", 0.3),
}

# (model, batch, s, t): one row and one key; a query block and a key tile
# exactly (64, 32) and one past; several query blocks (64 rows) and key
# tiles (32 keys) with tails; t != s both ways, also under a causal mask.
CASES = [
    ("causal_d5", 1, 1, 1),
    ("causal_d5", 2, 7, 7),
    ("causal_d5", 1, 65, 65),
    ("causal_d5", 2, 150, 150),
    ("cross_d37", 1, 1, 1),
    ("cross_d37", 2, 7, 13),
    ("cross_d37", 1, 70, 33),
    ("cross_d37", 1, 33, 130),
    ("causal_d64", 1, 1, 1),
    ("causal_d64", 1, 64, 64),
    ("causal_d64", 2, 97, 97),
    ("causal_d64", 1, 200, 200),
    ("causal_ts_d16", 1, 5, 40),
    ("causal_ts_d16", 2, 70, 33),
    ("causal_ts_d16", 1, 40, 5),
    ("bidir_d1", 1, 1, 1),
    ("bidir_d1", 2, 37, 50),
    ("merged_causal_d5", 1, 1, 1),
    ("merged_causal_d5", 2, 150, 150),
    ("merged_cross_d37", 2, 7, 13),
    ("merged_cross_d37", 1, 70, 33),
]


def reference(q, k, v, dy, mask, scale):
    """Attention and its gradients in float64, as docs/abi.md defines it."""
    s = scale * np.einsum("bhid,bhjd->bhij", q, k)
    if mask == "causal":
        i = np.arange(s.shape[2])[:, None]
        j = np.arange(s.shape[3])[None, :]
        s = np.where(j > i, -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    y = np.einsum("bhij,bhjd->bhid", p, v)
    dv = np.einsum("bhij,bhid->bhjd", p, dy)
    dp = np.einsum("bhid,bhjd->bhij", dy, v)
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True))
    dq = scale * np.einsum("bhij,bhjd->bhid", ds, k)
    dk = scale * np.einsum("bhij,bhid->bhjd", ds, q)
    return [y, dq, dk, dv]


def run(binary, model, shape, inputs, workdir):
    heads, dh = MODELS[model][:2]
    b, s, t = shape
    path_in = os.path.join(workdir, "in.bin")
    path_out = os.path.join(workdir, "out.bin")
    # [b, h, len, dh] <-> [b, len, h, dh], the merged models' layout.
    merged = model.startswith("merged_")
    layout = (lambda x: x.transpose(0, 2, 1, 3)) if merged else (lambda x: x)
    np.concatenate([layout(x).astype(np.float32).ravel()
                    for x in inputs]).tofile(path_in)
    proc = subprocess.run(
        [binary, model, str(heads), str(dh), str(b), str(s), str(t), path_in,
         path_out], capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        return None
    flat = np.fromfile(path_out, dtype=np.float32).astype(np.float64)
    nq, nkv = b * heads * s * dh, b * heads * t * dh
    parts, at = [], 0
    for n, rows in ((nq, s), (nq, s), (nkv, t), (nkv, t)):
        part = flat[at:at + n]
        parts.append(layout(part.reshape(b, rows, heads, dh)) if merged else
                     part.reshape(b, heads, rows, dh))
        at += n
    return parts


def main():
    fused, unfused, workdir = sys.argv[1:4]
    rng = np.random.default_rng(7)
    failures = 0
    for model, b, s, t in CASES:
        heads, dh, mask, scale = MODELS[model]
        # Scores of a few units: peaked softmax rows, as in trained models.
        q = rng.standard_normal((b, heads, s, dh)) * 1.5
        k = rng.standard_normal((b, heads, t, dh)) * 1.5
        v = rng.standard_normal((b, heads, t, dh))
        dy = rng.standard_normal((b, heads, s, dh))
        inputs = [x.astype(np.float32) for x in (q, k, v, dy)]
        ref = reference(*[x.astype(np.float64) for x in inputs], mask, scale)
        got = run(fused, model, (b, s, t), inputs, workdir)
        base = run(unfused, model, (b, s, t), inputs, workdir)
        if got is None or base is None:
            print(f"FAIL {model} b={b} s={s} t={t}: a run failed")
            failures += 1
            continue
        floor = FLOOR * max(np.abs(r).max() for r in ref)
        worst = []
        for name, r, f, u in zip(("y", "dq", "dk", "dv"), ref, got, base):
            scale_r = max(np.abs(r).max(), floor)
            scale_u = max(np.abs(u).max(), floor)
            worst.append((name, np.abs(f - r).max() / scale_r,
                          np.abs(u - r).max() / scale_r,
                          np.abs(f - u).max() / scale_u))
        bad = any(max(e[1:]) > TOL or not np.isfinite(max(e[1:]))
                  for e in worst)
        failures += bad
        detail = ", ".join(f"{n} {fr:.1e}/{ur:.1e}/{fu:.1e}"
                           for n, fr, ur, fu in worst)
        print(f"{'FAIL' if bad else 'PASS'} {model} b={b} s={s} t={t} "
              f"(fused-ref/unfused-ref/fused-unfused): {detail}")
    print(f"failures: {failures}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
