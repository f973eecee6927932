#!/usr/bin/python3
"""Finite-difference checks of tfc's backward against tfc's own forward.

Independent of PyTorch and of the oracle: for tiny specs (d_model 8, 2 heads,
depth 2, seq 3..5) that together cover every spec feature -- each norm type x
position, each activation, each mask, cross-attention, embedding with each
positions kind, tied / untied head, logits without a loss, the
cross-entropy loss with ignored targets, key_padding (random lengths,
one row full and one shorter), and mixture-of-experts FFNs -- this script
compiles the spec,
builds harness/harness.c, and compares the gradient of OUR compiled
NAME_backward with central differences of OUR compiled NAME_forward.

The scalar is the model's loss (loss.bin) when it has one, else
f = sum(out * d_out) for a fixed random d_y / d_logits (the harness feeds the
same d_out to backward). Parameters are random (N(0, 0.3^2), norm weights
around 1: no zero biases or unit weights), inputs random normal. For a
direction v -- random normal restricted to one parameter tensor (one per
tensor), GLOBAL_DIRECTIONS over all parameters (scaled by 1/sqrt(#tensors), so
the step is as large as one tensor's), INPUT_DIRECTIONS over x and over enc --

    D(h) = (f(p + h v) - f(p - h v)) / (2 h),
    fd   = (4 D(h/2) - D(h)) / 3          (Richardson: O(h^4) truncation)

is compared with <grad, v>:

    |fd - <grad, v>| <= tol = RTOL |<grad, v>| + NOISE u S / h + |D(h) - D(h/2)|.

Why this tolerance. Forward runs in f32, so each f(p +- h v) carries a
rounding error of about u S, u = 2^-24 ~ 6e-8, S the scale of what f sums
(|loss|, or sqrt(sum (out_i d_out_i)^2) for independent errors of the
outputs, measured at every evaluated point), times the conditioning of the
network; a difference of two such values over 2h gives ~ u S / h (h = 1e-2:
~ 6e-6 S). The loss is also rounded to f32 once more when stored (~ u |loss|).
NOISE = 20 covers the conditioning of these tiny models (the errors observed
on correct gradients are a few u S / h: at most ~ 0.3 of tol, see
directions.txt). Truncation of the central difference is h^2 / 6 f'''(v):
~ 1e-5 relative for O(1) curvature at h = 1e-2, and Richardson takes it to
O(h^4); instead of assuming the curvature we add the measured
|D(h) - D(h/2)| (= (3/4) h^2 f'''/6 + noise), which bounds what is left.
RTOL = 2e-3 absorbs the rest. A wrong gradient of any tensor (a factor of a
few percent, a sign, a missing residual or tied-weight term, a transposed
weight) fails by an order of magnitude or more (checked by corrupting
gradients: a 2% error in one norm weight fails).

Kinks. relu and reglu make f piecewise smooth: a step that moves a
pre-activation through 0 makes the central difference wrong by up to half
that unit's share of the derivative, whatever h. Specs with them use
h = H_KINK = 2e-3 (fewer crossings), and a direction along which f is not
smooth at that scale -- D(h) != D(h/2), or second differences
f(h) - 2 f(0) + f(-h) that do not scale as h^2 -- is redrawn (at most
REDRAWS times; counted in the output). When no smooth direction turns up,
the base point itself sits on a kink (a pre-activation within ~h of 0, which
every direction of that tensor moves through): a new base point is drawn (at
most BASE_REDRAWS times). These tests read forward values only, so redrawing
cannot hide a wrong gradient.

Routing. A mixture-of-experts spec ([ffn] experts, top_k < experts) is
piecewise smooth too, with jumps: a step that swaps a token's k-th and
(k+1)-th expert changes its output (and the load-balancing loss's counts)
at once, D(h) and D(h/2) then differ by about a factor 2. Such specs are
handled as the kinked ones: h = H_KINK, and directions or base points
whose differences are not smooth are drawn again.

Prints one line per spec and check and finally `N passed, M failed`; exits 1
on any failure. Example:

  test/Numerics/finite_diff.py --tfc build/bin/tfc --runtime-lib build/lib \\
      --include runtime/include -j 2 --keep /tmp/fd
"""

import argparse
import concurrent.futures
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import traceback
import zlib

sys.dont_write_bytecode = True

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "harness", "harness.c")

H = 1e-2
H_KINK = 2e-3  # for relu / reglu specs
RTOL = 2e-3
NOISE = 20.0
U32 = 2.0 ** -24
KINK_FRACTION = 1e-3
REDRAWS = 4        # directions per check, when each crosses a kink
BASE_REDRAWS = 3   # base points, when some check never finds a smooth direction
GLOBAL_DIRECTIONS = 3  # directions over all parameters at once
INPUT_DIRECTIONS = 2   # directions over x, and over enc

# ---------------------------------------------------------------------------
# The specs: every feature on a tiny model.
# ---------------------------------------------------------------------------


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def make_toml(name, sections):
    lines = [f'name = "{name}"']
    for section, table in sections.items():
        lines.append(f"\n[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu", "reglu")
NORMS = ("layernorm", "rmsnorm")
POSITIONS = ("pre", "post", "deepnorm")
MODEL = {"d_model": 8, "n_heads": 2, "depth": 2, "max_seq": 8, "max_batch": 2}


def specs():
    """(name, sections, batch, seq, enc_seq)."""
    out = []
    # Blocks: k % 2 and k % 3 run through all 6 norm type x position pairs;
    # every activation, both masks, bias on/off, final norm on/off.
    for k, act in enumerate(ACTIVATIONS):
        norm, pos = NORMS[k % 2], POSITIONS[k % 3]
        mask = ("causal", "bidirectional")[(k // 2) % 2]
        model = dict(MODEL, d_ff=12 if k % 2 else 16, bias=k != 3)
        norm_t = {"type": norm, "position": pos}
        if k == 4:
            norm_t["final"] = True   # post with a final norm
        if k == 6:
            norm_t["final"] = False  # pre without
        out.append((f"fd_{norm[:3]}_{pos}_{act}_{mask[:3]}",
                    {"model": model, "norm": norm_t, "ffn": {"activation": act},
                     "attention": {"mask": mask}}, 2, 3 + k % 3, 0))
    # Cross-attention, every position (deepnorm with its own alpha).
    for k, pos in enumerate(POSITIONS):
        norm = {"type": NORMS[k % 2], "position": pos}
        if pos == "deepnorm":
            norm["deepnorm_alpha"] = 1.3
        out.append((f"fd_cross_{pos}",
                    {"model": dict(MODEL, d_ff=12), "norm": norm,
                     "ffn": {"activation": ("gelu", "swiglu", "silu")[k]},
                     "attention": {"mask": ("causal", "bidirectional")[k % 2],
                                   "cross": True}}, 2, 4, 3 + 2 * k))
    # Embeddings and heads: every positions kind, tied / untied, loss / no loss,
    # no head.
    lm = [  # name, positions, head (None: no head), tied, loss, norm
        ("fd_lm_learned_untied_ce", "learned", True, False, "cross_entropy", {}),
        ("fd_lm_sin_tied_ce", "sinusoidal", True, True, "cross_entropy",
         {"type": "rmsnorm"}),
        ("fd_lm_nopos_untied_logits", "none", True, False, "none", {"position": "post"}),
        ("fd_lm_learned_tied_logits", "learned", True, True, "none",
         {"position": "deepnorm", "type": "rmsnorm"}),
        ("fd_lm_sin_nohead", "sinusoidal", False, False, "none", {}),
    ]
    for name, positions, head, tied, loss, norm in lm:
        secs = {"model": dict(MODEL, d_ff=16), "ffn": {"activation": "gelu_tanh"},
                "embedding": {"vocab": 11, "positions": positions}}
        if norm:
            secs["norm"] = norm
        if head:
            secs["head"] = {"tied": tied, "loss": loss}
        out.append((name, secs, 2, 5, 0))
    out.append(("fd_lm_cross_ce", {
        "model": dict(MODEL, d_ff=12), "norm": {"type": "rmsnorm"},
        "ffn": {"activation": "geglu"}, "attention": {"cross": True},
        "embedding": {"vocab": 13, "positions": "learned"},
        "head": {"tied": True, "loss": "cross_entropy"}}, 2, 4, 5))
    # key_padding: lengths random (Model.__init__), one row full, one shorter.
    out.append(("fd_pad_bi_window", {
        "model": dict(MODEL, d_ff=12, max_batch=3), "norm": {"position": "post"},
        "ffn": {"activation": "gelu"},
        "attention": {"mask": "bidirectional", "sliding_window": 2, "key_padding": True}},
        3, 5, 0))
    out.append(("fd_pad_lm_causal_ce", {
        "model": dict(MODEL, d_ff=12, max_batch=3), "norm": {"type": "rmsnorm"},
        "ffn": {"activation": "swiglu"},
        "attention": {"positions": "rope", "n_kv_heads": 1, "key_padding": True},
        "embedding": {"vocab": 11, "positions": "none"},
        "head": {"loss": "cross_entropy"}}, 3, 5, 0))
    out.append(("fd_qkvbias_qwen2", {  # q/k/v biases only
        "model": dict(MODEL, d_ff=12, bias=False), "norm": {"type": "rmsnorm"},
        "ffn": {"activation": "swiglu"},
        "attention": {"qkv_bias": True, "positions": "rope", "n_kv_heads": 1}}, 2, 4, 0))
    out.append(("fd_embnorm_bert", {  # BERT's embedding LayerNorm
        "model": dict(MODEL, d_ff=12, max_batch=3), "norm": {"position": "post"},
        "ffn": {"activation": "gelu"},
        "attention": {"mask": "bidirectional", "key_padding": True},
        "embedding": {"vocab": 11, "positions": "learned", "norm": True}}, 3, 5, 0))
    out.append(("fd_pad_cross", {
        "model": dict(MODEL, d_ff=12), "norm": {"position": "deepnorm"},
        "ffn": {"activation": "silu"},
        "attention": {"cross": True, "key_padding": True}}, 2, 4, 3))
    # Ablations and sandwich: the norms before and after each sub-layer
    # (with cross-attention), no norms, no residual.
    out.append(("fd_sandwich_cross", {
        "model": dict(MODEL, d_ff=12), "norm": {"position": "sandwich"},
        "ffn": {"activation": "gelu"}, "attention": {"cross": True}}, 2, 4, 3))
    out.append(("fd_sandwich_rms_lm", {
        "model": dict(MODEL, d_ff=12), "norm": {"type": "rmsnorm", "position": "sandwich"},
        "ffn": {"activation": "swiglu"}, "attention": {"positions": "rope"},
        "embedding": {"vocab": 11, "positions": "none"},
        "head": {"loss": "cross_entropy"}}, 2, 5, 0))
    out.append(("fd_nonorm_post_bi", {
        "model": dict(MODEL, d_ff=12), "norm": {"type": "none", "position": "post"},
        "ffn": {"activation": "silu"}, "attention": {"mask": "bidirectional"}}, 2, 4, 0))
    out.append(("fd_nores_pre_lm", {
        "model": dict(MODEL, d_ff=12), "residual": {"enabled": False},
        "ffn": {"activation": "gelu_tanh"},
        "embedding": {"vocab": 11, "positions": "learned"},
        "head": {"tied": True, "loss": "cross_entropy"}}, 2, 4, 0))
    # Mixture of experts (4 experts of width d_ff): an LM with top-2
    # routing, a shared expert, key padding and a load-balancing loss large
    # enough to weigh in the router's gradient; a Switch block (top-1, the
    # raw softmax gate) after post-LN, with cross-attention.
    out.append(("fd_moe_lm_top2_shared_aux_pad", {
        "model": dict(MODEL, d_ff=12, max_batch=3), "norm": {"type": "rmsnorm"},
        "ffn": {"activation": "swiglu", "experts": 4, "top_k": 2, "shared_experts": 1,
                "aux_loss": 0.1},
        "attention": {"key_padding": True},
        "embedding": {"vocab": 11, "positions": "learned"},
        "head": {"loss": "cross_entropy"}}, 3, 4, 0))
    out.append(("fd_moe_switch_post_cross", {
        "model": dict(MODEL, d_ff=12), "norm": {"position": "post"},
        "ffn": {"activation": "gelu", "experts": 4, "top_k": 1, "renormalize": False},
        "attention": {"cross": True}}, 2, 4, 3))
    # Hyper-connections: mHC (3 streams, 4 Sinkhorn iterations, every one
    # differentiated) in a padded pre-norm LM; HC (2 streams) after post-LN
    # (a norm on each stream) with cross-attention.
    out.append(("fd_mhc3_lm_pad", {
        "model": dict(MODEL, d_ff=12, max_batch=3), "norm": {"type": "rmsnorm"},
        "residual": {"streams": 3, "sinkhorn_iters": 4},
        "attention": {"key_padding": True},
        "embedding": {"vocab": 11, "positions": "learned"},
        "head": {"loss": "cross_entropy"}}, 3, 4, 0))
    out.append(("fd_hc2_post_cross", {
        "model": dict(MODEL, d_ff=12), "norm": {"position": "post"},
        "residual": {"streams": 2, "mixing": "hc"},
        "attention": {"cross": True}}, 2, 3, 4))
    out.append(("fd_nores_post_cross", {
        "model": dict(MODEL, d_ff=12), "norm": {"type": "rmsnorm", "position": "post"},
        "residual": {"enabled": False}, "ffn": {"activation": "geglu"},
        "attention": {"cross": True}}, 2, 3, 4))
    return out


# ---------------------------------------------------------------------------


def run(cmd, timeout):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout} s: {' '.join(cmd)}"
    except OSError as e:
        return 127, f"{e}: {' '.join(cmd)}"
    return p.returncode, (p.stdout + p.stderr).strip()


def tail(text, n=6):
    return "".join("\n    | " + line for line in text.splitlines()[-n:])


def read_header_txt(path):
    info, tensors = {}, []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "tensor":
                tensors.append((parts[1], int(parts[2]), int(parts[3])))
            else:
                info[parts[0]] = parts[1]
    return info, tensors


class Failed(Exception):
    pass


class Model:
    """One compiled spec and the files its harness reads."""

    def __init__(self, args, sd, name, b, s, t, rng):
        self.args, self.sd, self.b, self.s, self.t = args, sd, b, s, t
        self.harness = os.path.join(sd, "harness")
        self.d = os.path.join(sd, "run")
        os.makedirs(self.d, exist_ok=True)
        # The harness writes header.txt (macros, tensor table) first thing;
        # here it then stops for want of inputs.
        hd = os.path.join(sd, "header")
        os.makedirs(hd, exist_ok=True)
        rc, out = run([self.harness, hd, "1", "1", "1"], args.timeout)
        if not os.path.exists(os.path.join(hd, "header.txt")):
            raise Failed(f"harness exited {rc}, no header.txt" + tail(out))
        info, self.tensors = read_header_txt(os.path.join(hd, "header.txt"))
        self.info = {k: int(v) for k, v in info.items() if k != "name"}
        self.d_model = self.info["D_MODEL"]
        self.vocab = self.info["VOCAB"]
        self.emb, self.head = self.info["HAS_EMBEDDING"], self.info["HAS_HEAD"]
        self.loss, self.cross = self.info["HAS_LOSS"], self.info["HAS_CROSS"]
        self.key_padding = self.info.get("HAS_KEY_PADDING", 0)
        with open(os.path.join(sd, "spec.toml")) as f:
            text = f.read()
        # ReLU kinks, and the jumps where a token's routing changes.
        self.kinks = re.search(r'activation = "(relu|reglu)"', text) is not None or \
            re.search(r'^experts = [1-9]', text, re.M) is not None
        # Random parameters (no zero biases or unit norm weights: no special
        # points), norm weights around 1.
        n = self.info["param_count"]
        self.params = rng.standard_normal(n) * 0.3
        for tname, offset, numel in self.tensors:
            if tname.endswith("norm.weight"):
                self.params[offset:offset + numel] += 1.0
        self.inputs = {}
        if self.emb:
            self.inputs["tokens"] = rng.integers(0, self.vocab, (b, s)).astype(np.int32)
        else:
            self.inputs["x"] = rng.standard_normal((b, s, self.d_model))
        if self.key_padding:
            # Right-padded rows: one full, one shorter, the rest random.
            lengths = rng.integers(1, s + 1, b)
            lengths[0] = s
            if b > 1:
                lengths[1] = rng.integers(1, s)
            self.inputs["lengths"] = lengths[rng.permutation(b)].astype(np.int32)
        if self.cross:
            self.inputs["enc"] = rng.standard_normal((b, t, self.d_model))
        if self.loss:
            tgt = rng.integers(0, self.vocab, (b, s)).astype(np.int32)
            tgt[0, 1] = -1  # ignored targets
            tgt[-1, -1] = -1
            self.inputs["targets"] = tgt
        else:
            width = self.vocab if self.head else self.d_model
            self.d_out = rng.standard_normal((b, s, width)).astype(np.float32)
            self.d_out.tofile(os.path.join(
                self.d, "d_logits.bin" if self.head else "d_y.bin"))
        # Round to f32 once: the perturbed points are p32 + h v in f64,
        # then rounded again.
        self.params = self.params.astype(np.float32).astype(np.float64)
        for k in ("x", "enc"):
            if k in self.inputs:
                self.inputs[k] = self.inputs[k].astype(np.float32).astype(np.float64)
        self.evals = 0

    def _write(self, params, inputs):
        params.astype(np.float32).tofile(os.path.join(self.d, "params.bin"))
        for k, v in inputs.items():
            v.astype(np.int32 if k in ("tokens", "targets", "lengths") else np.float32).tofile(
                os.path.join(self.d, k + ".bin"))

    def _harness(self, flags=()):
        cmd = [self.harness, *flags, self.d, str(self.b), str(self.s),
               str(self.t if self.cross else 0), "0"]
        rc, out = run(cmd, self.args.timeout)
        if rc != 0:
            raise Failed(f"harness exited {rc}" + tail(out))
        self.evals += 1

    def f(self, params=None, **override):
        """The scalar at params (default: the base point), with inputs
        optionally replaced; returns (f, noise scale S)."""
        inputs = dict(self.inputs, **override)
        self._write(self.params if params is None else params, inputs)
        self._harness()
        if self.loss:
            loss = float(np.fromfile(os.path.join(self.d, "loss.bin"), dtype=np.float32)[0])
            return loss, abs(loss)
        out = np.fromfile(os.path.join(self.d, "logits.bin" if self.head else "y.bin"),
                          dtype=np.float32).astype(np.float64)
        terms = out * self.d_out.reshape(-1)
        return float(terms.sum()), float(np.sqrt((terms ** 2).sum()))

    def grads(self):
        self._write(self.params, self.inputs)
        self._harness(["-b"])
        g = {"params": np.fromfile(os.path.join(self.d, "d_params.bin"),
                                   dtype=np.float32).astype(np.float64)}
        if not self.emb:
            g["x"] = np.fromfile(os.path.join(self.d, "d_x.bin"),
                                 dtype=np.float32).astype(np.float64)
        if self.cross:
            g["enc"] = np.fromfile(os.path.join(self.d, "d_enc.bin"),
                                   dtype=np.float32).astype(np.float64)
        return g


def along(model, what, v, h):
    """f(base + h v) and its noise scale, v in params or an input."""
    if what == "params":
        return model.f(model.params + h * v)
    base = model.inputs[what]
    return model.f(**{what: base + h * v.reshape(base.shape)})


def check_direction(model, what, grad, draw, rng, h, kinks):
    """Compares <grad, v> with the Richardson central difference along v;
    redraws v when f is not smooth along it.

    Returns (ok, err / tol, rel, detail, redraws, kinked); rel =
    err / |<grad, v>|, or None when |<grad, v>| is not above 10x the noise
    allowance (e.g. the key bias', which vanishes identically); kinked: the
    last direction still was not smooth."""
    f0, s0 = model.f0
    for attempt in range(REDRAWS + 1):
        v = draw(rng)
        an = float(grad @ v)
        fp1, sp1 = along(model, what, v, h)
        fm1, sm1 = along(model, what, v, -h)
        fp2, sp2 = along(model, what, v, h / 2)
        fm2, sm2 = along(model, what, v, -h / 2)
        d1, d2 = (fp1 - fm1) / (2 * h), (fp2 - fm2) / h
        fd = (4 * d2 - d1) / 3
        noise = NOISE * U32 * max(s0, sp1, sm1, sp2, sm2) / h
        trunc = abs(d1 - d2)
        # A kink at t0 in [-h, h] makes f piecewise smooth: then D(h) !=
        # D(h/2) (unless t0 = 0), or the second differences
        # f(h) - 2 f(0) + f(-h) and 4 * (the same at h/2) differ (unless
        # |t0| = h/3); for a smooth f both are O(h^2) and O(h^3) / noise.
        dd = abs((fp1 + fm1 - 2 * f0) / 4 - (fp2 + fm2 - 2 * f0)) / h
        kinked = kinks and max(trunc, dd) > KINK_FRACTION * abs(an) + noise
        if kinked and attempt < REDRAWS:
            continue  # not smooth at this scale (a ReLU kink): another v
        tol = RTOL * abs(an) + noise + trunc
        err = abs(fd - an)
        rel = err / abs(an) if abs(an) > 10 * noise else None
        detail = (f"<g,v>={an:.7g} fd={fd:.7g} D(h)={d1:.7g} D(h/2)={d2:.7g} "
                  f"dd={dd:.2g} noise={noise:.2g} err={err:.2g} tol={tol:.2g}")
        return err <= tol, err / tol, rel, detail, attempt, kinked
    raise AssertionError("unreachable")


class Results:
    def __init__(self, name):
        self.name, self.lines, self.passed, self.failed = name, [], 0, 0
        self.worst = {}

    def add(self, ok, case, detail=""):
        self.lines.append(f"{'PASS' if ok else 'FAIL'} {self.name} {case}"
                          + (f" {detail}" if detail else ""))
        self.passed += ok
        self.failed += not ok

    def note(self, kind, rel, where):
        if kind not in self.worst or rel > self.worst[kind][0]:
            self.worst[kind] = (rel, f"{self.name} {where}")


def run_spec(args, work, spec):
    name, sections, b, s, t = spec
    res = Results(name)
    try:
        _run_spec(args, work, name, sections, b, s, t, res)
    except Failed as e:
        res.add(False, "run", str(e))
    except Exception:
        res.add(False, "internal", "exception in finite_diff.py:" +
                tail(traceback.format_exc(), 12))
    return res


def _run_spec(args, work, name, sections, b, s, t, res):
    sd = os.path.join(work, name)
    shutil.rmtree(sd, ignore_errors=True)
    os.makedirs(sd)
    toml_path = os.path.join(sd, "spec.toml")
    with open(toml_path, "w") as f:
        f.write(make_toml(name, sections))
    # A training build: decoding is decode_check.py's (a third less compile
    # time for a causal spec).
    rc, out = run([args.tfc, toml_path, "-o", os.path.join(sd, name + ".o"),
                   "--no-decoding"] + args.tfc_arg, args.timeout)
    if rc != 0:
        raise Failed(f"tfc exited {rc}" + tail(out))
    cc = args.cc.split() + [
        "-O2", "-std=c11", "-Werror=implicit-function-declaration", "-I" + args.include,
        "-I" + sd, f'-DTFC_HEADER="{name}.h"', f"-DTFC_NAME={name}",
        f"-DTFC_UNAME={name.upper()}", HARNESS, os.path.join(sd, name + ".o"),
        "-L" + args.runtime_lib, "-ltfc_runtime", "-lpthread", "-lm",
        "-o", os.path.join(sd, "harness")]
    rc, out = run(cc, args.timeout)
    if rc != 0:
        raise Failed(f"cc exited {rc}" + tail(out, 10))

    rng = np.random.default_rng([zlib.crc32(name.encode()), args.seed])
    # A base point can sit on a ReLU kink: a pre-activation within ~h of 0
    # for every direction of some tensor. Then a new base point is drawn
    # (forward values decide that, never the gradient).
    for base in range(BASE_REDRAWS + 1):
        model = Model(args, sd, name, b, s, t, rng)
        out = check_model(model, rng, sd)
        if not out["kinked"] or base == BASE_REDRAWS:
            break
    h, worst, notes, bad = out["h"], out["worst"], out["notes"], out["bad"]
    for kind, value, case in notes:
        res.note(kind, value, case)
    summary = ", ".join(f"{k} err/tol {r:.2g} ({c})" for k, (r, c) in worst.items())
    res.add(not bad, f"b={b} s={s}" + (f" enc={t}" if model.cross else "") + f" h={h:g}",
            f"{out['checks']} directions, {out['redraws']} redrawn, "
            f"{base} base point(s) redrawn, {model.evals} runs; {summary}"
            + "".join("\n    | " + x for x in bad[:8]))


def check_model(model, rng, sd):
    g = model.grads()
    for k, v in g.items():
        if not np.all(np.isfinite(v)):
            raise Failed(f"non-finite gradient d_{k}")

    n = model.info["param_count"]
    checks = []  # (case, what, grad, draw)
    for tname, offset, numel in model.tensors:
        def draw(r, offset=offset, numel=numel):
            v = np.zeros(n)
            v[offset:offset + numel] = r.standard_normal(numel)
            return v
        checks.append((tname, "params", g["params"], draw))
    # Over all parameters, scaled so that the step is as large as one
    # tensor's (a full-size step curves f too much for h = 1e-2).
    scale = 1 / math.sqrt(len(model.tensors))
    for k in range(GLOBAL_DIRECTIONS):
        checks.append((f"all-params#{k}", "params", g["params"],
                       lambda r: r.standard_normal(n) * scale))
    for inp in ("x", "enc"):
        if inp in g:
            for k in range(INPUT_DIRECTIONS):
                checks.append((f"d_{inp}#{k}", inp, g[inp],
                               lambda r, m=g[inp].size: r.standard_normal(m)))

    # Kinks (relu, reglu): a smaller step makes crossing one rarer.
    h = H_KINK if model.kinks else H
    model.f0 = model.f()
    out = {"h": h, "worst": {}, "notes": [], "bad": [], "redraws": 0, "kinked": 0,
           "checks": len(checks)}
    worst = out["worst"]
    with open(os.path.join(sd, "directions.txt"), "a") as log:
        print(f"# base point, h = {h:g}", file=log)
        for case, what, grad, draw in checks:
            ok, used, rel, detail, again, kinked = check_direction(
                model, what, grad, draw, rng, h, model.kinks)
            print(f"{'ok ' if ok else 'BAD'} {case} redrawn={again}"
                  f"{' KINK' if kinked else ''} {detail}", file=log)
            out["redraws"] += again
            out["kinked"] += kinked
            kind = "d_params" if what == "params" else f"d_{what}"
            out["notes"].append((kind + " err/tol", used, case))
            if rel is not None:
                out["notes"].append((kind + " rel", rel, case))
            if kind not in worst or used > worst[kind][0]:
                worst[kind] = (used, case)
            if not ok:
                out["bad"].append(f"{case}: {detail}")
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--tfc", default="tfc")
    ap.add_argument("--tfc-arg", action="append", default=[])
    ap.add_argument("--runtime-lib", required=True)
    ap.add_argument("--include", required=True)
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", metavar="DIR")
    ap.add_argument("--filter", metavar="REGEX")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=int, default=300)
    args = ap.parse_args(argv)

    todo = specs()
    if args.filter:
        todo = [sp for sp in todo if re.search(args.filter, sp[0])]
    if args.list:
        for sp in todo:
            print(sp[0], sp[2:])
        return 0
    if not todo:
        print("no specs selected\n0 passed, 1 failed")
        return 1
    tfc = shutil.which(args.tfc)
    if tfc is None:
        print(f"error: tfc not found: {args.tfc}\n0 passed, 1 failed")
        return 1
    args.tfc = os.path.abspath(tfc)
    args.include = os.path.abspath(args.include)
    args.runtime_lib = os.path.abspath(args.runtime_lib)
    work = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="tfc-fd-")
    os.makedirs(work, exist_ok=True)

    passed = failed = 0
    worst = {}
    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for fut in concurrent.futures.as_completed(
                [pool.submit(run_spec, args, work, sp) for sp in todo]):
            res = fut.result()
            with lock:
                for line in res.lines:
                    print(line)
                sys.stdout.flush()
                passed += res.passed
                failed += res.failed
                for kind, (rel, where) in res.worst.items():
                    if kind not in worst or rel > worst[kind][0]:
                        worst[kind] = (rel, where)
    if not args.keep:
        if failed:
            print(f"(work files kept in {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)
    for kind in sorted(worst):
        print(f"worst {kind}: {worst[kind][0]:.3g} ({worst[kind][1]})")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
