#!/usr/bin/env python3
"""Inputs and checks for grad-ops-numeric.test.

`gen DIR` writes the inputs of every case and DIR/manifest.txt for
grad_ops_main.c; `check DIR` reads the outputs back and checks each
gradient op three ways:

1. against the formula of its op description, evaluated in float64 on the
   same float32 inputs (elementwise);
2. the formula itself against central differences, in float64, of the
   forward op as docs/abi.md defines it (elementwise, numpy);
3. against central differences of the compiled forward op (the @fwd model
   run at inputs +- h * V): d/dh sum(forward(inputs + h V) * dy) must equal
   the sum over the op's inputs of <gradient, V>. This ties the gradient to
   what the generated forward code computes, layouts and all.

Exact checks (zeros, copies, masks, ignored rows, unused table rows) compare
bits: the driver fills outputs with NaN first, so a skipped store shows.
"""

import math
import os
import sys

import numpy as np

B, S = 2, 7  # batch 2 of max 2, seq 7 of max 8: 14 rows
D, F, Z, V, H, DH, N, P = 19, 37, 23, 11, 3, 5, 37, 8
KV = 2  # K/V heads of the @heads model, each shared by 3 query heads
RH, RDH = 3, 8  # heads and head width of the @rope model
LN_EPS, RMS_EPS = 1e-5, 1e-6
# name -> (offset, shape), as grad_ops.mlir's header.
PARAMS = {"gamma": (0, (D,)), "beta": (19, (D,)), "W": (38, (D, F)),
          "bias": (741, (F,)), "Wt": (778, (F, D)), "E": (1481, (V, D)),
          "P": (1690, (P, D))}
PARAM_COUNT = 1842
FD_H = 1e-2  # step of the compiled-forward differences (see check_fd)

f32, i32 = np.float32, np.int32


def inputs():
    """The base inputs, the same in gen and check (fixed seed)."""
    rng = np.random.default_rng(20240601)
    n = lambda *shape: rng.standard_normal(shape)
    t = {}
    params = np.zeros(PARAM_COUNT)
    for name, (off, shape) in PARAMS.items():
        size = int(np.prod(shape))
        params[off:off + size] = 0.5 * n(size)
    params[0:D] += 1.0  # gamma around 1
    t["params"] = params.astype(f32)
    t["x"] = (1.5 * n(B, S, D) + 0.3).astype(f32)  # rows with a mean
    t["dy19"] = n(B, S, D).astype(f32)
    t["u19"] = n(B, S, D).astype(f32)
    t["dy37"] = n(B, S, F).astype(f32)
    t["z"] = (2 * n(B, S, Z)).astype(f32)
    t["p"] = softmax(t["z"].astype(np.float64)).astype(f32)
    t["dp"] = n(B, S, Z).astype(f32)
    t["dm"] = n(B, 2, S, S).astype(f32)
    # Kept 0.2 away from relu's kink, which h * V (|V| < 4) cannot cross.
    a = 2 * n(B, S, F)
    t["a"] = (np.sign(a) * (np.abs(a) + 0.2)).astype(f32)
    t["up"] = n(B, S, F).astype(f32)
    t["dya"] = n(B, S, F).astype(f32)
    # Every id appears more than once among 14 rows of 11 ids.
    t["tokens"] = rng.integers(0, V, (B, S)).astype(i32)
    ids = rng.integers(0, V, (B, S))
    bad = [-5, -1, V, V + 7]  # clamped to rows 0 and V - 1
    ids.reshape(-1)[:len(bad)] = bad[:ids.size]
    t["ids"] = ids.astype(i32)
    t["dye"] = n(B, S, D).astype(f32)
    t["logits"] = (2 * n(B, S, V)).astype(f32)
    targets = rng.integers(0, V, (B, S))
    ignored = [i % targets.size for i in (1, 10, 13)]
    targets.reshape(-1)[ignored] = [-1, V, -100]
    t["targets"] = targets.astype(i32)
    t["none"] = np.where(np.arange(B * S).reshape(B, S) % 2, -1, V).astype(i32)
    t["dloss"] = np.array(1.7, dtype=f32)
    # A right-padded batch: row 0 whole, row 1 padded after 3 positions.
    t["lengths"] = np.array([S, 3], dtype=i32)
    for name in ("q", "k", "v", "do"):
        t[name] = n(B, H, S, DH).astype(f32)
    t["ds"] = n(B, H, S, S).astype(f32)
    t["pr"] = softmax(n(B, H, S, S)).astype(f32)
    t["at"] = n(B, H, DH, S).astype(f32)
    t["b"] = n(B, H, DH, N).astype(f32)
    t["bt"] = n(B, H, N, DH).astype(f32)
    t["xl"] = n(B, S, D).astype(f32)
    # Directions of the compiled-forward differences: every float input of
    # @fwd except xl (the input of linear and add_positions), whose
    # gradients are no gradient op's.
    dirs = {}
    for name in ("params", "x", "z", "a", "up", "logits", "q", "k", "pr",
                 "v"):
        dirs[name] = np.clip(n(*t[name].shape), -3.5, 3.5).astype(f32)
    # Grouped-query heads (drawn last: the draws above stay as they were):
    # KV = 2 K/V heads shared by 6 query heads.
    t["kv2"] = n(B, KV, S, DH).astype(f32)
    t["g6"] = n(B, 3 * KV, S, DH).astype(f32)
    dirs["kv2"] = np.clip(n(*t["kv2"].shape), -3.5, 3.5).astype(f32)
    # RoPE (drawn after the heads' draws).
    for name in ("rq", "rk", "rdy"):
        t[name] = n(B, RH, S, RDH).astype(f32)
    dirs["rq"] = np.clip(n(*t["rq"].shape), -3.5, 3.5).astype(f32)
    # Grouped norms (drawn after RoPE's).
    t["x38"] = (1.5 * n(B, S, 2 * D) - 0.4).astype(f32)
    t["dy38"] = n(B, S, 2 * D).astype(f32)
    dirs["x38"] = np.clip(n(*t["x38"].shape), -3.5, 3.5).astype(f32)
    return t, dirs


# Case name -> (model, input names, output names and shapes).
GRAD_CASES = {
    "mm": (["params", "xl", "dy37", "u19"],
           [("dw", (D, F)), ("dwt", (F, D)), ("db", (F,)), ("zeros", (B, S, D)),
            ("sum", (B, S, D))]),
    "bmm": (["params", "q", "k", "ds", "pr", "v", "do", "at", "b", "bt"],
            [("dq", (B, H, S, DH)), ("dk", (B, H, S, DH)), ("dpr", (B, H, S, S)),
             ("dv", (B, H, S, DH)), ("tn", (B, H, S, N)), ("tt", (B, H, S, N))]),
    "norm": (["params", "x", "dy19", "p", "dp", "dm"],
             [("ln_dx", (B, S, D)), ("ln_dg", (D,)), ("ln_db", (D,)),
              ("rms_dx", (B, S, D)), ("rms_dg", (D,)), ("sm", (B, S, Z)),
              ("causal", (B, 2, S, S)), ("bidir", (B, 2, S, S)),
              ("causal_w3", (B, 2, S, S)), ("bidir_w2", (B, 2, S, S))]),
    "act": (["params", "a", "up", "dya"],
            [(f"{k}_{kind}", (B, S, F)) for kind in
             ("relu", "gelu", "gelu_tanh", "silu") for k in ("act",)] +
            [(f"{k}_{kind}", (B, S, F)) for kind in
             ("relu", "gelu", "gelu_tanh", "silu") for k in ("dgate", "dup")]),
    "heads": (["params", "kv2", "g6"],
              [("repeat", (B, 3 * KV, S, DH)), ("sum", (B, KV, S, DH))]),
    "rope": (["params", "rq", "rk", "rdy"],
             [(name, (B, RH, S, RDH)) for name in ("half", "inter", "far", "inv")] +
             [("scores0", (B, RH, S, S)), ("scores3000", (B, RH, S, S))]),
    "pad": (["params", "lengths", "dm", "dy19", "targets"],
            [("mask", (B, 2, S, S)), ("causal", (B, 2, S, S)),
             ("bidir_w2", (B, 2, S, S)), ("zero", (B, S, D)), ("ignored", (B, S))]),
    "gnorm": (["params", "x38", "dy38"],
              [("ln_dx", (B, S, 2 * D)), ("ln_dg", (D,)), ("ln_db", (D,)),
               ("rms_dx", (B, S, 2 * D)), ("rms_dg", (D,)),
               ("ln", (B, S, 2 * D)), ("rms", (B, S, 2 * D))]),
    "emb": (["params", "tokens", "ids", "dye", "logits", "targets", "none",
             "dloss"],
            [("de", (V, D)), ("dclamp", (V, D)), ("dpos", (P, D)),
             ("dlogits", (B, S, V)), ("dnone", (B, S, V))]),
}
FWD_INPUTS = ["params", "x", "z", "a", "up", "tokens", "logits", "targets",
              "q", "k", "pr", "v", "xl"]
FWD_OUTPUTS = [("ln", (B, S, D)), ("rms", (B, S, D)), ("softmax", (B, S, Z)),
               ("relu", (B, S, F)), ("gelu", (B, S, F)),
               ("gelu_tanh", (B, S, F)), ("silu", (B, S, F)),
               ("glu_relu", (B, S, F)), ("glu_gelu", (B, S, F)),
               ("glu_gelu_tanh", (B, S, F)), ("glu_silu", (B, S, F)),
               ("linear", (B, S, F)), ("tied", (B, S, F)),
               ("embedding", (B, S, D)), ("positions", (B, S, D)),
               ("loss", ()), ("scores", (B, H, S, S)), ("context", (B, H, S, DH))]


def cases():
    t, dirs = inputs()
    result = []
    for name, (ins, outs) in GRAD_CASES.items():
        result.append((name, name, [t[i] for i in ins], outs))
    for sign, case in ((1, "fwd_plus"), (-1, "fwd_minus")):
        arrays = []
        for i in FWD_INPUTS:
            x = t[i]
            if i in dirs:
                x = (x.astype(np.float64) + sign * FD_H * dirs[i]).astype(f32)
            arrays.append(x)
        result.append((case, "fwd", arrays, FWD_OUTPUTS))
    # @heads holds its own forward op (repeat_heads): run it at kv2 +- h V.
    ins, outs = GRAD_CASES["heads"]
    for sign, case in ((1, "heads_plus"), (-1, "heads_minus")):
        arrays = [t[i] for i in ins]
        arrays[1] = (t["kv2"].astype(np.float64) +
                     sign * FD_H * dirs["kv2"]).astype(f32)
        result.append((case, "heads", arrays, outs))
    # @rope holds its forward op too: run it at rq +- h V.
    ins, outs = GRAD_CASES["rope"]
    for sign, case in ((1, "rope_plus"), (-1, "rope_minus")):
        arrays = [t[i] for i in ins]
        arrays[1] = (t["rq"].astype(np.float64) +
                     sign * FD_H * dirs["rq"]).astype(f32)
        result.append((case, "rope", arrays, outs))
    # @gnorm holds its forward ops: run it at x38 +- h V.
    ins, outs = GRAD_CASES["gnorm"]
    for sign, case in ((1, "gnorm_plus"), (-1, "gnorm_minus")):
        arrays = [t[i] for i in ins]
        arrays[1] = (t["x38"].astype(np.float64) +
                     sign * FD_H * dirs["x38"]).astype(f32)
        result.append((case, "gnorm", arrays, outs))
    return result


def gen(d):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "manifest.txt"), "w") as manifest:
        for name, model, arrays, outs in cases():
            manifest.write(f"case {name} {model} {B} {S} "
                           f"{len(arrays) + len(outs)}\n")
            for k, a in enumerate(arrays):
                a.tofile(os.path.join(d, f"{name}.{k}.bin"))
                manifest.write(f"i {a.nbytes}\n")
            for _, shape in outs:
                manifest.write(f"o {4 * int(np.prod(shape))}\n")


def read_outputs(d):
    out = {}
    for name, _, arrays, outs in cases():
        for k, (oname, shape) in enumerate(outs, start=len(arrays)):
            data = np.fromfile(os.path.join(d, f"{name}.{k}.bin"), dtype=f32)
            out[(name, oname)] = data.reshape(shape)
    return out


#===--- The forward ops (docs/abi.md) and the gradient formulas, float64 ---===#

def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


erf = np.vectorize(math.erf)
C = math.sqrt(2 / math.pi)


def act(kind, x):
    if kind == "relu":
        return np.maximum(x, 0)
    if kind == "gelu":
        return 0.5 * x * (1 + erf(x / math.sqrt(2)))
    if kind == "gelu_tanh":
        return 0.5 * x * (1 + np.tanh(C * (x + 0.044715 * x ** 3)))
    return x / (1 + np.exp(-x))


def act_grad(kind, x):
    if kind == "relu":
        return (x > 0).astype(np.float64)
    if kind == "gelu":
        return (0.5 * (1 + erf(x / math.sqrt(2))) +
                x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi))
    if kind == "gelu_tanh":
        t = np.tanh(C * (x + 0.044715 * x ** 3))
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * C * (1 + 3 * 0.044715 * x * x)
    s = 1 / (1 + np.exp(-x))
    return s * (1 + x * (1 - s))


def layer_norm(x, g, b):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + LN_EPS) * g + b


def rms_norm(x, g):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + RMS_EPS) * g


def norm_grad(x, g, dy, rms):
    mean = 0 if rms else x.mean(-1, keepdims=True)
    eps = RMS_EPS if rms else LN_EPS
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)
    xhat = (x - mean) * rstd
    gy = dy * g
    dx = gy - xhat * (gy * xhat).mean(-1, keepdims=True)
    if not rms:
        dx -= gy.mean(-1, keepdims=True)
    rows = tuple(range(x.ndim - 1))
    return rstd * dx, (dy * xhat).sum(rows), dy.sum(rows)


def cross_entropy(logits, targets):
    valid = (targets >= 0) & (targets < V)
    lse = np.log(np.exp(logits).sum(-1))
    picked = np.take_along_axis(logits, np.where(valid, targets, 0)[..., None],
                                -1)[..., 0]
    return np.where(valid, lse - picked, 0).sum() / max(valid.sum(), 1)


def cross_entropy_grad(logits, targets, dloss):
    valid = (targets >= 0) & (targets < V)
    onehot = np.eye(V)[np.where(valid, targets, 0)]
    g = (softmax(logits) - onehot) * dloss / max(valid.sum(), 1)
    return np.where(valid[..., None], g, 0)


def embedding_grad(ids, dy, rows):
    out = np.zeros((rows, dy.shape[-1]))
    np.add.at(out, np.clip(ids, 0, rows - 1).reshape(-1), dy.reshape(-1, dy.shape[-1]))
    return out


def rope(x, theta, rot, style, offset=0, inverse=False):
    """RoFormer's rotation of [b, h, t, dh] in float64, positions offset.."""
    t = x.shape[2]
    freq = theta ** (-np.arange(0, rot, 2) / rot)
    angle = (offset + np.arange(t))[:, None] * freq[None, :]
    cos, sin = np.cos(angle), np.sin(angle) * (-1 if inverse else 1)
    out = x.copy()
    if style == "half":
        i1, i2 = np.arange(rot // 2), np.arange(rot // 2, rot)
    else:
        i1, i2 = np.arange(0, rot, 2), np.arange(1, rot, 2)
    x1, x2 = x[..., i1], x[..., i2]
    out[..., i1] = x1 * cos - x2 * sin
    out[..., i2] = x2 * cos + x1 * sin
    return out


def fd(f, x, h=1e-5):
    """Central differences of the scalar f at x, elementwise, float64."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[i] += h
        xm[i] -= h
        g[i] = (f(xp) - f(xm)) / (2 * h)
    return g


#===--- Checks ---===#

failures = 0


def report(what, ok, detail):
    global failures
    failures += not ok
    print(f"{'ok' if ok else 'FAIL'}: {what} ({detail})")


# Compiled f32 against the float64 formula: max error over max(1, |ref|max).
# Every output is a few f32 operations on O(1) values or a sum of at most 37
# products (rows 14, widths <= 37, matmul k <= 14): a few ulp (6e-8) per
# operation plus sqrt(terms) growth, and the polynomial exp/erf/tanh are
# good to ~1e-7 relative; 1e-5 leaves a 10x margin over what this
# observes (<= 1e-6).
TOL = 1e-5


def close(what, got, ref, tol=TOL):
    ref = np.asarray(ref, dtype=np.float64)
    scale = max(1.0, float(np.abs(ref).max()))
    err = float(np.abs(got.astype(np.float64) - ref).max()) / scale
    report(what, bool(np.isfinite(got).all()) and err <= tol, f"error {err:.1e}")


def same(what, got, ref):
    ok = np.array_equal(got.view(i32), np.asarray(ref, dtype=f32).view(i32))
    report(what, ok, "bitwise")


# The float64 formula against float64 differences of the float64 forward:
# with h = 1e-5 truncation is ~1e-10 and rounding ~1e-16 * |f| / h ~ 1e-10
# for |f| ~ 20; 1e-6 is far above both and far below any wrong term.
FD_TOL = 1e-6


def formula(what, ref, numeric):
    err = float(np.abs(ref - numeric).max()) / max(1.0, float(np.abs(ref).max()))
    report(f"{what} formula vs differences", err <= FD_TOL, f"error {err:.1e}")


def check(d):
    t64, dirs = inputs()
    t = {k: v.astype(np.float64) for k, v in t64.items()}
    out = read_outputs(d)
    g = lambda case, name: out[(case, name)]
    pv = lambda name: t["params"][PARAMS[name][0]:PARAMS[name][0] +
                                  int(np.prod(PARAMS[name][1]))].reshape(PARAMS[name][1])
    x, gamma, beta = t["x"], pv("gamma"), pv("beta")

    # Plumbing.
    same("zeros_like", g("mm", "zeros"), np.zeros((B, S, D)))
    same("add", g("mm", "sum"), t64["xl"] + t64["u19"])

    # Matmul gradients.
    rows_x, rows_dy = t["xl"].reshape(-1, D), t["dy37"].reshape(-1, F)
    close("linear_weight_grad", g("mm", "dw"), rows_x.T @ rows_dy)
    close("linear_weight_grad transpose_weight", g("mm", "dwt"), rows_dy.T @ rows_x)
    close("reduce_rows", g("mm", "db"), rows_dy.sum(0))
    T = lambda m: np.swapaxes(m, -1, -2)
    close("batch_matmul (dS K)", g("bmm", "dq"), t["ds"] @ t["k"])
    close("batch_matmul transpose_a (dS^T Q)", g("bmm", "dk"), T(t["ds"]) @ t["q"])
    close("batch_matmul transpose_b (dO V^T)", g("bmm", "dpr"), t["do"] @ T(t["v"]))
    close("batch_matmul transpose_a (P^T dO)", g("bmm", "dv"), T(t["pr"]) @ t["do"])
    close("batch_matmul transpose_a, n = 37", g("bmm", "tn"), T(t["at"]) @ t["b"])
    close("batch_matmul transpose_a transpose_b", g("bmm", "tt"),
          T(t["at"]) @ T(t["bt"]))

    # Norms.
    dy = t["dy19"]
    for rms, op in ((False, "layer_norm_grad"), (True, "rms_norm_grad")):
        dx, dg, db = norm_grad(x, gamma, dy, rms)
        pre = "rms" if rms else "ln"
        close(f"{op} dx", g("norm", f"{pre}_dx"), dx)
        close(f"{op} dgamma", g("norm", f"{pre}_dg"), dg)
        if not rms:
            close(f"{op} dbeta", g("norm", "ln_db"), db)
        fwd = ((lambda xx, gg, bb: rms_norm(xx, gg)) if rms else layer_norm)
        formula(f"{op} dx", dx, fd(lambda v: (fwd(v, gamma, beta) * dy).sum(), x))
        formula(f"{op} dgamma", dg, fd(lambda v: (fwd(x, v, beta) * dy).sum(), gamma))
        if not rms:
            formula(f"{op} dbeta", db, fd(lambda v: (fwd(x, gamma, v) * dy).sum(), beta))

    # Grouped norms: each row's two groups of 19 on their own.
    xg = t["x38"].astype(np.float64)
    dyg = t["dy38"].astype(np.float64)
    grouped = lambda a: a.reshape(B, S, 2, D)
    close("layer_norm groups 2", g("gnorm", "ln"),
          layer_norm(grouped(xg), gamma, beta).reshape(B, S, 2 * D))
    close("rms_norm groups 2", g("gnorm", "rms"),
          rms_norm(grouped(xg), gamma).reshape(B, S, 2 * D))
    for rms, op in ((False, "layer_norm_grad"), (True, "rms_norm_grad")):
        dx, dg, db = norm_grad(grouped(xg), gamma, grouped(dyg), rms)
        pre = "rms" if rms else "ln"
        close(f"{op} groups 2 dx", g("gnorm", f"{pre}_dx"), dx.reshape(B, S, 2 * D))
        close(f"{op} groups 2 dgamma", g("gnorm", f"{pre}_dg"), dg)
        if not rms:
            close(f"{op} groups 2 dbeta", g("gnorm", "ln_db"), db)
        model_fd(f"{op} groups 2", out, ("gnorm", pre), dyg,
                 g("gnorm", f"{pre}_dx"), dirs["x38"])

    # Softmax and mask.
    p, dp = t["p"], t["dp"]
    sm = p * (dp - (p * dp).sum(-1, keepdims=True))
    close("softmax_grad", g("norm", "sm"), sm)
    formula("softmax_grad", sm,
            fd(lambda v: (softmax(v) * dp).sum(), t["z"]))
    i, j = np.indices((S, S))
    same("mask_grad causal", g("norm", "causal"), np.where(j > i, 0, t64["dm"]))
    same("mask_grad bidirectional", g("norm", "bidir"), t64["dm"])
    # Sliding windows: i - 3 < j <= i, and |i - j| < 2.
    same("mask_grad causal window 3", g("norm", "causal_w3"),
         np.where((j > i) | (j <= i - 3), 0, t64["dm"]))
    same("mask_grad bidirectional window 2", g("norm", "bidir_w2"),
         np.where(abs(i - j) >= 2, 0, t64["dm"]))

    # A padded batch: keys j >= lengths[b] hidden from every query of row b
    # (on top of the mask and window), positions i >= lengths[b] zeroed, their
    # targets ignored (-1).
    lengths = t64["lengths"]
    padded_key = (np.arange(S)[None, :] >= lengths[:, None])[:, None, None, :]
    padded_row = np.arange(S)[None, :] >= lengths[:, None]  # [B, S]
    dm = t64["dm"]
    same("mask bidirectional window 2 lengths", g("pad", "mask"),
         np.where((abs(i - j) >= 2) | padded_key, -np.inf, dm))
    same("mask_grad causal lengths", g("pad", "causal"),
         np.where((j > i) | padded_key, 0, dm))
    same("mask_grad bidirectional window 2 lengths", g("pad", "bidir_w2"),
         np.where((abs(i - j) >= 2) | padded_key, 0, dm))
    zero = np.where(padded_row[..., None], 0, t64["dy19"])
    same("zero_padding", g("pad", "zero"), zero)
    # Linear: its gradient is itself, sum(zero_padding(x + h v) * dy) moves
    # by <zero_padding(dy), v>.
    dy = t["u19"]
    formula("zero_padding", np.where(padded_row[..., None], 0, dy),
            fd(lambda v: (np.where(padded_row[..., None], 0, v) * dy).sum(),
               t["dy19"]))
    report("ignore_padding", np.array_equal(
        g("pad", "ignored").view(i32),
        np.where(padded_row, -1, t64["targets"]).astype(i32)), "bitwise")

    # Activations and gated units.
    a, up, dya = t["a"], t["up"], t["dya"]
    for kind in ("relu", "gelu", "gelu_tanh", "silu"):
        d = act_grad(kind, a)
        close(f"activation_grad {kind}", g("act", f"act_{kind}"), d * dya)
        close(f"glu_grad {kind} dgate", g("act", f"dgate_{kind}"), d * up * dya)
        close(f"glu_grad {kind} dup", g("act", f"dup_{kind}"), act(kind, a) * dya)
        h = 1e-5  # elementwise, so the differences are elementwise too
        formula(f"activation_grad {kind}", d,
                (act(kind, a + h) - act(kind, a - h)) / (2 * h))

    # Tables and the loss.
    same_rows = embedding_grad(t64["tokens"], t["dye"], V)
    close("embedding_grad", g("emb", "de"), same_rows)
    unused = np.setdiff1d(np.arange(V), t64["tokens"])
    same(f"embedding_grad unused rows {list(unused)}", g("emb", "de")[unused],
         np.zeros((len(unused), D)))
    close("embedding_grad clamps ids", g("emb", "dclamp"),
          embedding_grad(t64["ids"], t["dye"], V))
    dpos = np.zeros((P, D))
    dpos[:S] = t["dye"].sum(0)
    close("positions_grad", g("emb", "dpos")[:S], dpos[:S])
    same("positions_grad rows >= seq", g("emb", "dpos")[S:], np.zeros((P - S, D)))
    logits, targets, dloss = t["logits"], t64["targets"], float(t["dloss"])
    ce = cross_entropy_grad(logits, targets, dloss)
    close("cross_entropy_grad", g("emb", "dlogits"), ce)
    ignored = ~((targets >= 0) & (targets < V))
    same("cross_entropy_grad ignored rows", g("emb", "dlogits")[ignored],
         np.zeros((int(ignored.sum()), V)))
    same("cross_entropy_grad no valid target", g("emb", "dnone"), np.zeros((B, S, V)))
    formula("cross_entropy_grad", ce,
            fd(lambda v: cross_entropy(v, targets) * dloss, logits))

    # Grouped-query heads: query head i reads K/V head i // 3; the gradient
    # sums each group of 3 heads (in head order, as float32 adds).
    repeat = lambda kv: np.repeat(kv, 3, axis=1)
    group_sum = lambda g6: g6.reshape(B, KV, 3, S, DH).sum(2)
    same("repeat_heads", g("heads", "repeat"), repeat(t64["kv2"]))
    g6 = t64["g6"]
    same("sum_head_groups", g("heads", "sum"),
         (g6[:, 0::3] + g6[:, 1::3]) + g6[:, 2::3])
    formula("sum_head_groups", group_sum(t["g6"]),
            fd(lambda kv: (repeat(kv) * t["g6"]).sum(), t["kv2"]))
    model_fd("repeat_heads", out, ("heads", "repeat"), t["g6"], g("heads", "sum"),
             dirs["kv2"])

    # RoPE: the rotations against float64 (positions past 4000 included:
    # the angle is reduced in f64, so f32 keeps its precision there), the
    # untouched dims bit for bit, the inverse as the transpose, and scores
    # that depend on relative positions only.
    q = t["rq"]
    close("rope half", g("rope", "half"), rope(q, 1e4, 8, "half"))
    close("rope interleaved partial", g("rope", "inter"),
          rope(q, 500.0, 6, "interleaved"))
    same("rope partial passes dims 6.. through", g("rope", "inter")[..., 6:],
         t64["rq"][..., 6:])
    close("rope at positions 4000..", g("rope", "far"), rope(q, 1e4, 8, "half", 4000))
    close("rope inverse", g("rope", "inv"), rope(t["rdy"], 1e4, 8, "half", inverse=True))
    formula("rope inverse (gradient)", rope(t["rdy"], 1e4, 8, "half", inverse=True),
            fd(lambda v: (rope(v, 1e4, 8, "half") * t["rdy"]).sum(), q))
    close("rope scores at positions 3000.. equal those at 0..",
          g("rope", "scores3000"), g("rope", "scores0").astype(np.float64))
    model_fd("rope", out, ("rope", "half"), t["rdy"], g("rope", "inv"), dirs["rq"])

    check_fd(out, t, dirs)


def model_fd(what, out, output, dy, grad, direction):
    """A model holding its own forward op, run at the input +- h V (cases
    MODEL_plus, MODEL_minus): d/dh sum(output * dy) against <grad, V>, with
    check_fd's measure and bound."""
    model, name = output
    plus = (out[(model + "_plus", name)].astype(np.float64) * dy).sum()
    minus = (out[(model + "_minus", name)].astype(np.float64) * dy).sum()
    numeric = (plus - minus) / (2 * FD_H)
    grad = grad.astype(np.float64)
    analytic = (grad * direction).sum()
    err = abs(numeric - analytic) / max(np.abs(grad * direction).sum(), 1e-30)
    report(f"{what}: gradient vs compiled forward differences", err <= 2e-3,
           f"{numeric:.4f} vs {analytic:.4f}, error {err:.1e}")


def check_fd(out, t, dirs):
    """Directional differences of the compiled forward ops.

    F(h) = sum(forward(inputs + h V) * dy) in float64 from the f32 outputs;
    (F(h) - F(-h)) / 2h against sum <grad, V> over the op's inputs.
    Truncation is h^2/6 * F''' ~ 1e-5 relative for these smooth functions
    (the bilinear ops have none; relu's kink is out of reach, see inputs()).
    Rounding: each of the <= 1036 outputs is off by a few f32 ulp of its
    size, |dF| <~ 1e-6 * sum |out * dy|, divided by 2h = 0.02. Errors are
    measured against sum |grad * V| (the size of the terms, immune to
    cancellation); 2e-3 is well above both.
    """
    gr = lambda case, name: out[(case, name)].astype(np.float64)
    pdir = lambda name: dirs["params"][PARAMS[name][0]:PARAMS[name][0] +
                                       int(np.prod(PARAMS[name][1]))].reshape(PARAMS[name][1])
    weights = {"ln": "dy19", "rms": "dy19", "softmax": "dp", "linear": "dy37",
               "tied": "dy37", "embedding": "dye", "positions": "dye",
               "loss": "dloss", "scores": "ds", "context": "do"}
    for kind in ("relu", "gelu", "gelu_tanh", "silu"):
        weights[kind] = weights[f"glu_{kind}"] = "dya"
    # forward output -> [(gradient, direction)], the gradients from the runs
    # above at the base inputs.
    terms = {
        "ln": [(gr("norm", "ln_dx"), dirs["x"]), (gr("norm", "ln_dg"), pdir("gamma")),
               (gr("norm", "ln_db"), pdir("beta"))],
        "rms": [(gr("norm", "rms_dx"), dirs["x"]), (gr("norm", "rms_dg"), pdir("gamma"))],
        # softmax_grad ran on p = softmax(z) rounded to f32.
        "softmax": [(gr("norm", "sm"), dirs["z"])],
        "linear": [(gr("mm", "dw"), pdir("W")), (gr("mm", "db"), pdir("bias"))],
        "tied": [(gr("mm", "dwt"), pdir("Wt"))],
        "embedding": [(gr("emb", "de"), pdir("E"))],
        "positions": [(gr("emb", "dpos"), pdir("P"))],
        "loss": [(gr("emb", "dlogits"), dirs["logits"])],
        "scores": [(gr("bmm", "dq"), dirs["q"]), (gr("bmm", "dk"), dirs["k"])],
        "context": [(gr("bmm", "dpr"), dirs["pr"]), (gr("bmm", "dv"), dirs["v"])],
    }
    for kind in ("relu", "gelu", "gelu_tanh", "silu"):
        terms[kind] = [(gr("act", f"act_{kind}"), dirs["a"])]
        terms[f"glu_{kind}"] = [(gr("act", f"dgate_{kind}"), dirs["a"]),
                                (gr("act", f"dup_{kind}"), dirs["up"])]
    for name, _ in FWD_OUTPUTS:
        w = t[weights[name]]
        plus = (out[("fwd_plus", name)].astype(np.float64) * w).sum()
        minus = (out[("fwd_minus", name)].astype(np.float64) * w).sum()
        numeric = (plus - minus) / (2 * FD_H)
        analytic = sum((gv * v.astype(np.float64)).sum() for gv, v in terms[name])
        size = sum(np.abs(gv * v).sum() for gv, v in terms[name])
        err = abs(numeric - analytic) / max(size, 1e-30)
        report(f"{name}: gradient vs compiled forward differences", err <= 2e-3,
               f"{numeric:.4f} vs {analytic:.4f}, error {err:.1e}")


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(sys.argv[2])
    else:
        check(sys.argv[2])
        print(f"failures: {failures}")
        sys.exit(failures != 0)
