#!/usr/bin/python3
"""The independent PyTorch oracle for `tfc`.

Builds a torch.nn.Module from a spec TOML file alone -- its own reading of the
TOML (tomllib) and its own defaults, written from docs/abi.md; nothing here
imports or calls the compiler -- and computes what a generated `NAME_forward`
must return, in float64 (default) or float32.

    from oracle import Oracle
    m = Oracle.from_file("spec.toml")            # float64
    m.load_flat(params, layout_json="NAME.json") # flat f32 buffer (+ cross-check)
    logits, loss = m(tokens, targets=targets)    # outputs in ABI order
    y, = m(x, lengths=lengths)                   # [attention] key_padding
    loss.backward(); g = m.flat_grad()           # gradients in the same layout
    m.probe_outputs()                            # [probes]: hidden_norms, expert_counts

Mixture of experts ([ffn] experts >= 2, class MoE): routing from float64
probabilities, ties to the lower expert; the load-balancing losses join the
loss; m.expert_counts [depth, E] (int32) after each forward. tfc routes from
f32 logits, so a token whose k-th and (k+1)-th probabilities nearly tie may
be routed otherwise: m.route_gap(...) (or m.min_route_gap after a forward)
gives the smallest relative gap, for a caller to draw other inputs.

Hyper-connections ([residual] streams = n > 1, docs/hyper_connections.md):
the blocks carry n residual streams [b, s, n, d] (the embedding output
copied n times, summed before final_norm); each sub-layer reads, writes and
mixes them through its own mappings: mixing "hc" (Zhu et al. 2024, dynamic
HC) or "mhc" (Xie et al. 2025; H_res by Sinkhorn-Knopp, unrolled). The
hyper-connection tensors start at the papers' init (hc_init_values), the
rest at zero, until load_flat.

Parameters are registered under their ABI names ("blocks.0.attn.wq.weight"),
linear weights stored [in, out] (y = x @ W + b), exactly as in the flat
buffer, so autograd gradients map one to one onto the ABI's gradient buffer.

Run as a script: `oracle.py spec.toml` prints the resolved config and layout;
`oracle.py spec.toml --params p.bin --x x.bin ... --out DIR` runs forward.
"""

import argparse
import json
import math
import os
import sys
import tomllib

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

# ---------------------------------------------------------------------------
# Spec: the TOML file and its defaults (docs/abi.md, compiler/spec/Spec.h).
# ---------------------------------------------------------------------------

ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "silu", "swiglu", "geglu", "reglu")
GATE_OF = {"swiglu": "silu", "geglu": "gelu", "reglu": "relu"}

_KEYS = {
    "": {"name", "model", "norm", "residual", "ffn", "attention", "embedding",
         "head", "init", "probes", "target"},
    "model": {"d_model", "n_heads", "d_ff", "depth", "max_seq", "max_batch",
              "bias", "dtype"},
    "norm": {"type", "position", "eps", "final", "deepnorm_alpha",
             "deepnorm_beta"},
    "residual": {"enabled", "streams", "mixing", "sinkhorn_iters"},
    "ffn": {"activation", "multiple_of", "experts", "top_k", "renormalize",
            "shared_experts", "aux_loss"},
    "attention": {"mask", "cross", "n_kv_heads", "head_dim", "qk_norm",
                  "positions", "rope_theta", "rope_style", "rope_fraction", "qkv_bias",
                  "sliding_window", "key_padding", "cross_n_kv_heads", "cross_head_dim"},
    "embedding": {"vocab", "positions", "norm"},
    "head": {"tied", "loss"},
    "init": {"scheme", "std", "embedding", "embedding_std"},
    "probes": {"hidden_norms", "expert_counts"},
    "target": {"device", "cpu", "features"},
}


class SpecError(ValueError):
    pass


class Config:
    """A spec with every default resolved (the oracle's own reading)."""

    def __init__(self, doc):
        for section, keys in _KEYS.items():
            table = doc if section == "" else doc.get(section, {})
            if not isinstance(table, dict):
                raise SpecError(f"[{section}] must be a table")
            unknown = set(table) - keys
            if unknown:
                raise SpecError(f"unknown key(s) in [{section or 'top'}]: "
                                f"{sorted(unknown)}")

        def get(section, key, default=None, required=False):
            table = doc.get(section, {})
            if key in table:
                return table[key]
            if required:
                raise SpecError(f"missing [{section}] {key}")
            return default

        def choice(section, key, default, allowed):
            v = get(section, key, default)
            if v not in allowed:
                raise SpecError(f"[{section}] {key} = {v!r}: not one of {allowed}")
            return v

        self.name = doc.get("name")
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise SpecError("name must be a C identifier")

        self.d_model = int(get("model", "d_model", required=True))
        self.n_heads = int(get("model", "n_heads", required=True))
        self.depth = int(get("model", "depth", 1))
        # abi.md does not state these two defaults; 1024 / 256 are the
        # compiler's (a mismatch would show in the layout cross-check).
        self.max_seq = int(get("model", "max_seq", 1024))
        self.max_batch = int(get("model", "max_batch", 256))  # Not used by the math.
        self.bias = bool(get("model", "bias", True))
        self.qkv_bias = bool(get("attention", "qkv_bias", self.bias))
        # bf16: the linear layers' matmuls (forward and backward) multiply
        # bf16-rounded operands; everything else stays f32 (abi.md).
        self.linear_dtype = choice("model", "dtype", "f32", ("f32", "bf16"))
        if self.d_model <= 0 or self.n_heads <= 0:
            raise SpecError("d_model and n_heads must be positive")
        if self.depth < 1 or self.max_seq < 1:
            raise SpecError("depth and max_seq must be >= 1")
        # Heads: head_dim defaults to d_model / n_heads; grouped-query
        # attention shares each of n_kv_heads K/V heads among
        # n_heads / n_kv_heads consecutive query heads.
        head_dim = get("attention", "head_dim")
        if head_dim is None:
            if self.d_model % self.n_heads:
                raise SpecError("d_model must be a multiple of n_heads "
                                "unless [attention] head_dim is given")
            head_dim = self.d_model // self.n_heads
        self.head_dim = int(head_dim)
        self.n_kv_heads = int(get("attention", "n_kv_heads", self.n_heads))
        if self.head_dim < 1 or self.n_kv_heads < 1 or \
                self.n_heads % self.n_kv_heads:
            raise SpecError("n_heads must be a multiple of n_kv_heads")

        # type "none" (an ablation): no norm and no norm weights anywhere
        # but QK-norm, which has its own type. sandwich: a norm before each
        # sub-layer and one on its output, before the residual add.
        self.norm_type = choice("norm", "type", "layernorm",
                                ("layernorm", "rmsnorm", "none"))
        self.position = choice("norm", "position", "pre",
                               ("pre", "post", "deepnorm", "sandwich"))
        self.eps = float(get("norm", "eps", 1e-5))
        self.final = bool(get("norm", "final",
                              self.position in ("pre", "sandwich") and
                              self.norm_type != "none"))
        if self.final and self.norm_type == "none":
            raise SpecError("norm.final needs a norm")
        # residual.enabled = false (an ablation): no skip connections.
        self.residual = bool(get("residual", "enabled", True))
        # [residual] streams = n > 1: hyper-connections (docs/hyper_connections.md),
        # n residual streams, each sub-layer reading, writing and mixing them
        # through its own mappings: mixing "hc" (Zhu et al. 2024, dynamic HC)
        # or "mhc" (Xie et al. 2025: H_res projected by sinkhorn_iters
        # unrolled Sinkhorn-Knopp iterations). n = 1: today's residual.
        res = doc.get("residual", {})
        self.streams = res.get("streams", 1)
        if isinstance(self.streams, bool) or not isinstance(self.streams, int) or \
                self.streams < 1:
            raise SpecError(f"[residual] streams = {self.streams!r}: not an integer >= 1")
        self.hyper = self.streams > 1
        hc_keys = [k for k in ("mixing", "sinkhorn_iters") if k in res]
        if not self.hyper and hc_keys:
            raise SpecError(f"[residual] {', '.join(hc_keys)} need(s) streams >= 2")
        if self.hyper and not self.residual:
            raise SpecError("[residual] streams > 1 needs enabled = true (the streams "
                            "are the skip path that enabled = false removes)")
        self.mixing = res.get("mixing", "mhc") if self.hyper else "none"
        if self.mixing not in (("hc", "mhc") if self.hyper else ("none",)):
            raise SpecError(f"[residual] mixing = {self.mixing!r}: not one of "
                            "('hc', 'mhc')")
        iters = res.get("sinkhorn_iters", 20)
        if self.mixing != "mhc" and "sinkhorn_iters" in res:
            raise SpecError("[residual] sinkhorn_iters needs mixing = \"mhc\"")
        if isinstance(iters, bool) or not isinstance(iters, int) or iters < 1:
            raise SpecError(f"[residual] sinkhorn_iters = {iters!r}: not an integer >= 1")
        self.sinkhorn_iters = iters if self.mixing == "mhc" else 0
        # [probes] hidden_norms: an output that changes nothing else; the
        # oracle always records the norms (Oracle.hidden_norms).
        self.probe_hidden_norms = bool(get("probes", "hidden_norms", False))

        self.activation = choice("ffn", "activation", "gelu", ACTIVATIONS)
        self.gated = self.activation in GATE_OF
        self.multiple_of = int(get("ffn", "multiple_of", 256))
        d_ff = get("model", "d_ff")
        if d_ff is None:
            if self.gated:
                m = self.multiple_of
                d_ff = -(-int(8 * self.d_model / 3) // m) * m
            else:
                d_ff = 4 * self.d_model
        self.d_ff = int(d_ff)

        self.mask = choice("attention", "mask", "causal", ("causal", "bidirectional"))
        self.cross = bool(get("attention", "cross", False))
        # Cross-attention's own K/V heads and head width (self-attention's
        # unless given; only with cross = true).
        if not self.cross and (get("attention", "cross_n_kv_heads") is not None or
                               get("attention", "cross_head_dim") is not None):
            raise SpecError("cross_n_kv_heads / cross_head_dim need cross = true")
        self.cross_n_kv_heads = int(get("attention", "cross_n_kv_heads", self.n_kv_heads))
        self.cross_head_dim = int(get("attention", "cross_head_dim", self.head_dim))
        if self.cross_head_dim < 1 or self.cross_n_kv_heads < 1 or \
                self.n_heads % self.cross_n_kv_heads:
            raise SpecError("n_heads must be a multiple of cross_n_kv_heads")
        # QK-norm: every attention's q and k heads normalised over head_dim
        # with their own weights. RoPE: self-attention only.
        self.qk_norm = choice("attention", "qk_norm", "none",
                              ("none", "rmsnorm", "layernorm"))
        self.attn_positions = choice("attention", "positions", "none",
                                     ("none", "rope", "alibi"))
        self.rope_theta = float(get("attention", "rope_theta", 10000.0))
        self.rope_style = choice("attention", "rope_style", "half",
                                 ("half", "interleaved"))
        fraction = float(get("attention", "rope_fraction", 1.0))
        self.rotary_dim = int(fraction * self.head_dim)  # HF's truncation
        if self.attn_positions == "rope" and (self.rotary_dim % 2 or
                                              self.rotary_dim < 2):
            raise SpecError("the rotary width must be even and >= 2")
        # Self-attention only: query i sees i - w < j <= i (causal) or
        # |i - j| < w (bidirectional); 0 = no window.
        self.sliding_window = int(get("attention", "sliding_window", 0))
        if self.sliding_window < 0:
            raise SpecError("sliding_window must be 0 or positive")
        # Right-padded batches: forward and backward take lengths [batch];
        # position i of row b is padding when i >= lengths[b]. Self-attention
        # hides those keys, the output is 0 there, the loss ignores them.
        self.key_padding = get("attention", "key_padding", False)
        if not isinstance(self.key_padding, bool):
            raise SpecError(f"[attention] key_padding = {self.key_padding!r}: "
                            "not a bool")

        # DeepNorm (Wang et al. 2022): alpha scales the residual. Only alpha
        # matters for forward; beta is an init scale.
        if self.position == "deepnorm":
            k = 3 if self.cross else 2
            self.alpha = float(get("norm", "deepnorm_alpha", (k * self.depth) ** 0.25))
        else:
            self.alpha = 1.0

        self.has_embedding = "embedding" in doc
        self.vocab = 0
        self.positions = "none"
        self.embed_norm = False
        if self.has_embedding:
            self.vocab = int(get("embedding", "vocab", required=True))
            self.positions = choice("embedding", "positions", "learned",
                                    ("learned", "sinusoidal", "none"))
            self.embed_norm = bool(get("embedding", "norm", False))
        self.has_head = "head" in doc
        self.tied = False
        self.loss = "none"
        if self.has_head:
            if not self.has_embedding:
                raise SpecError("[head] needs [embedding] (vocab)")
            self.tied = bool(get("head", "tied", False))
            self.loss = choice("head", "loss", "none", ("none", "cross_entropy"))
        self.has_loss = self.loss == "cross_entropy"

        # Mixture of experts ([ffn] experts >= 2): a router (d_model -> E,
        # softmax) picks each token's top_k experts, each an FFN of the
        # block's activation and d_ff; shared_experts: a dense FFN of width
        # shared_experts * d_ff every token also goes through. aux_loss: the
        # load-balancing loss's coefficient, 0.01 by default when the model
        # has a loss (it is added to it), else 0.
        def integer(section, key, default):
            v = get(section, key, default)
            if isinstance(v, bool) or not isinstance(v, int):
                raise SpecError(f"[{section}] {key} = {v!r}: not an integer")
            return v

        def boolean(section, key, default):
            v = get(section, key, default)
            if not isinstance(v, bool):
                raise SpecError(f"[{section}] {key} = {v!r}: not a bool")
            return v

        self.experts = integer("ffn", "experts", 0)
        if self.experts < 0 or self.experts == 1:
            raise SpecError(f"[ffn] experts = {self.experts}: 0 (a dense FFN) "
                            "or at least 2")
        self.moe = self.experts >= 2
        moe_keys = [k for k in ("top_k", "renormalize", "shared_experts", "aux_loss")
                    if k in doc.get("ffn", {})]
        if not self.moe and moe_keys:
            raise SpecError(f"[ffn] {', '.join(moe_keys)} need(s) experts >= 2")
        self.top_k = integer("ffn", "top_k", 2)
        if self.moe and not 1 <= self.top_k <= self.experts:
            raise SpecError(f"[ffn] top_k = {self.top_k}: not in [1, experts = "
                            f"{self.experts}]")
        self.renormalize = boolean("ffn", "renormalize", True)
        self.shared_experts = integer("ffn", "shared_experts", 0)
        if self.shared_experts < 0:
            raise SpecError("[ffn] shared_experts must be 0 or positive")
        aux = get("ffn", "aux_loss", 0.01 if self.moe and self.has_loss else 0.0)
        if not isinstance(aux, float) or not math.isfinite(aux) or aux < 0:
            raise SpecError(f"[ffn] aux_loss = {aux!r}: not a float >= 0 (0.0, not 0)")
        if aux > 0 and not self.has_loss:
            raise SpecError("[ffn] aux_loss needs a loss ([head] loss = "
                            "\"cross_entropy\")")
        self.aux_loss = float(aux) if self.moe else 0.0
        if not self.moe:
            self.top_k, self.shared_experts = 0, 0
        # [probes] expert_counts (MoE only): forward's int32
        # expert_counts[depth][experts]; the oracle always records them
        # (Oracle.expert_counts).
        self.probe_expert_counts = boolean("probes", "expert_counts", False)
        if self.probe_expert_counts and not self.moe:
            raise SpecError("[probes] expert_counts needs [ffn] experts >= 2")

    @classmethod
    def from_file(cls, path):
        with open(path, "rb") as f:
            return cls(tomllib.load(f))

    @classmethod
    def from_string(cls, text):
        return cls(tomllib.loads(text))

    # The ABI's input / output lists, in order.
    def input_names(self):
        names = ["tokens" if self.has_embedding else "x"]
        if self.key_padding:
            names.append("lengths")
        if self.cross:
            names.append("enc")
        if self.has_loss:
            names.append("targets")
        return names

    def output_names(self):
        return ["logits" if self.has_head else "y"] + (["loss"] if self.has_loss else [])

    def probe_names(self):
        """The probe outputs forward writes after output_names(), in order
        (the oracle returns them from Oracle.probe_outputs(), not from
        forward): hidden_norms float [depth + 1], expert_counts int32
        [depth, experts]."""
        return (["hidden_norms"] if self.probe_hidden_norms else []) + \
            (["stream_norms"] if self.probe_hidden_norms and self.hyper else []) + \
            (["expert_counts"] if self.probe_expert_counts else [])


# ---------------------------------------------------------------------------
# Layout: the flat parameter buffer (docs/abi.md "Parameter layout").
# ---------------------------------------------------------------------------

def _norm_tensors(cfg, prefix, width=None, kind=None):
    d = width or cfg.d_model
    kind = kind or cfg.norm_type
    if kind == "none":
        return []
    out = [(prefix + ".weight", (d,))]
    if kind == "layernorm":
        out.append((prefix + ".bias", (d,)))
    return out


def _attention_tensors(cfg, prefix, kv_heads, head_dim):
    d = cfg.d_model
    q, kv = cfg.n_heads * head_dim, kv_heads * head_dim
    t = []
    for w, n_in, n_out in (("wq", d, q), ("wk", d, kv), ("wv", d, kv), ("wo", q, d)):
        t += _linear_tensors(cfg, prefix + w, n_in, n_out, cfg.qkv_bias if w != "wo" else None)
    if cfg.qk_norm != "none":
        for n in ("q_norm", "k_norm"):
            t += _norm_tensors(cfg, prefix + n, head_dim, cfg.qk_norm)
    return t


def _linear_tensors(cfg, prefix, n_in, n_out, bias=None):
    """bias: None for model.bias (q, k, v pass attention.qkv_bias)."""
    out = [(prefix + ".weight", (n_in, n_out))]
    if cfg.bias if bias is None else bias:
        out.append((prefix + ".bias", (n_out,)))
    return out


def _ffn_tensors(cfg, prefix, width):
    """A dense FFN of hidden width `width`: w_gate (gated), w_up, w_down."""
    d = cfg.d_model
    t = _linear_tensors(cfg, prefix + "w_gate", d, width) if cfg.gated else []
    t += _linear_tensors(cfg, prefix + "w_up", d, width)
    return t + _linear_tensors(cfg, prefix + "w_down", width, d)


def _moe_tensors(cfg, prefix):
    """The router [d, E] (no bias); the E routed experts' linears stacked,
    each weight [E, in, out] then its bias [E, out]; the shared experts as a
    dense FFN of width shared_experts * d_ff."""
    d, f, e = cfg.d_model, cfg.d_ff, cfg.experts
    t = [(prefix + "router.weight", (d, e))]
    names = (["w_gate"] if cfg.gated else []) + ["w_up", "w_down"]
    for w in names:
        n_in, n_out = (f, d) if w == "w_down" else (d, f)
        t.append((f"{prefix}experts.{w}.weight", (e, n_in, n_out)))
        if cfg.bias:
            t.append((f"{prefix}experts.{w}.bias", (e, n_out)))
    if cfg.shared_experts:
        t += _ffn_tensors(cfg, prefix + "shared.", cfg.shared_experts * f)
    return t


def hc_sublayers(cfg):
    """A block's sub-layers in order, each with its own hyper-connection."""
    return ["attn"] + (["cross"] if cfg.cross else []) + ["ffn"]


def _hc_tensors(cfg, prefix):
    """One sub-layer's hyper-connection (docs/hyper_connections.md), none
    with streams = 1. mhc (Xie et al., Eqs. 7 and 10-13): phi [n d, n^2 + 2n]
    (phi_pre | phi_post | phi_res, mat() row-major), alpha [3] (pre, post,
    res), b [n^2 + 2n] (b_pre | b_post | b_res). hc (Zhu et al., Eqs. 10-13,
    named as their Algorithm 2): static_beta B [n], static_alpha [A_m | A_r]
    [n, n + 1], dynamic_alpha_fn [W_m | W_r] [d, n + 1], dynamic_alpha_scale
    s_alpha [1], dynamic_beta_fn W_beta [d], dynamic_beta_scale s_beta [1]."""
    if not cfg.hyper:
        return []
    n, d = cfg.streams, cfg.d_model
    if cfg.mixing == "mhc":
        m = n * n + 2 * n
        return [(prefix + "phi", (n * d, m)), (prefix + "alpha", (3,)),
                (prefix + "b", (m,))]
    return [(prefix + "static_beta", (n,)), (prefix + "static_alpha", (n, n + 1)),
            (prefix + "dynamic_alpha_fn", (d, n + 1)),
            (prefix + "dynamic_alpha_scale", (1,)),
            (prefix + "dynamic_beta_fn", (d,)), (prefix + "dynamic_beta_scale", (1,))]


# mHC's init (docs/hyper_connections.md): the gating factors alpha as the
# paper's Table 5; the static biases b (which arXiv v2 leaves unsaid) at
# +-HC_MHC_BIAS: H_pre ~ one-hot on the sub-layer's home stream, H_post = 1,
# H_res ~ I; phi = 0 (HC's dynamic init).
HC_GATE_INIT = 0.01
HC_MHC_BIAS = 3.0


def hc_home_stream(cfg, i, sub):
    """The stream sub-layer `sub` of block i reads at init: k mod n, k its
    index among all sub-layers of the model (HC's Eq. 14; k from 0)."""
    subs = hc_sublayers(cfg)
    return (len(subs) * i + subs.index(sub)) % cfg.streams


def hc_init_values(cfg, i, sub):
    """{relative name: float64 array}: the paper init of a sub-layer's
    hyper-connection tensors (what NAME_init has to write)."""
    n, d = cfg.streams, cfg.d_model
    r = hc_home_stream(cfg, i, sub)
    if cfg.mixing == "mhc":
        c = HC_MHC_BIAS
        b_pre = np.full(n, -c)
        b_pre[r] = c
        b_res = 2 * c * np.eye(n) - c
        return {"phi": np.zeros((n * d, n * n + 2 * n)),
                "alpha": np.full(3, HC_GATE_INIT),
                "b": np.concatenate([b_pre, np.zeros(n), b_res.reshape(-1)])}
    a = np.zeros((n, n + 1))
    a[r, 0] = 1.0
    a[:, 1:] = np.eye(n)
    return {"static_beta": np.ones(n), "static_alpha": a,
            "dynamic_alpha_fn": np.zeros((d, n + 1)),
            "dynamic_alpha_scale": np.full(1, HC_GATE_INIT),
            "dynamic_beta_fn": np.zeros(d),
            "dynamic_beta_scale": np.full(1, HC_GATE_INIT)}


def block_tensors(cfg, i):
    d, f = cfg.d_model, cfg.d_ff
    p = f"blocks.{i}."
    sandwich = cfg.position == "sandwich"
    # Each sub-layer: its hyper-connection (streams > 1), its norm, its
    # tensors, then (sandwich) its post-norm.
    t = _hc_tensors(cfg, p + "attn_hc.")
    t += _norm_tensors(cfg, p + "attn_norm")
    t += _attention_tensors(cfg, p + "attn.", cfg.n_kv_heads, cfg.head_dim)
    if sandwich:
        t += _norm_tensors(cfg, p + "attn_post_norm")
    if cfg.cross:
        t += _hc_tensors(cfg, p + "cross_hc.")
        t += _norm_tensors(cfg, p + "cross_norm")
        t += _attention_tensors(cfg, p + "cross.", cfg.cross_n_kv_heads,
                                cfg.cross_head_dim)
        if sandwich:
            t += _norm_tensors(cfg, p + "cross_post_norm")
    t += _hc_tensors(cfg, p + "ffn_hc.")
    t += _norm_tensors(cfg, p + "ffn_norm")
    if cfg.moe:
        t += _moe_tensors(cfg, p + "ffn.")
    else:
        t += _ffn_tensors(cfg, p + "ffn.", f)
    if sandwich:
        t += _norm_tensors(cfg, p + "ffn_post_norm")
    return t


def compute_layout(cfg):
    """[(name, offset, shape)] in buffer order, and the total float count."""
    d = cfg.d_model
    tensors = []
    if cfg.has_embedding:
        tensors.append(("embed.tokens", (cfg.vocab, d)))
        if cfg.positions == "learned":
            tensors.append(("embed.positions", (cfg.max_seq, d)))
        if cfg.embed_norm:
            tensors += _norm_tensors(cfg, "embed.norm")
    for i in range(cfg.depth):
        tensors += block_tensors(cfg, i)
    if cfg.final:
        tensors += _norm_tensors(cfg, "final_norm")
    if cfg.has_head and not cfg.tied:
        tensors.append(("head.weight", (d, cfg.vocab)))
    layout, offset = [], 0
    for name, shape in tensors:
        layout.append((name, offset, tuple(shape)))
        offset += math.prod(shape)
    return layout, offset


def check_layout_json(cfg, layout_json):
    """Asserts that a `tfc --emit=layout` JSON agrees with compute_layout.

    layout_json: a path or an already-parsed dict. Raises AssertionError with
    the first disagreement."""
    if not isinstance(layout_json, dict):
        with open(layout_json) as f:
            layout_json = json.load(f)
    mine, count = compute_layout(cfg)
    if "name" in layout_json:
        assert layout_json["name"] == cfg.name, \
            f"layout name {layout_json['name']!r} != spec name {cfg.name!r}"
    assert layout_json["param_count"] == count, \
        f"param_count {layout_json['param_count']} != oracle's {count}"
    theirs = layout_json["tensors"]
    for k, ((name, offset, shape), t) in enumerate(zip(mine, theirs)):
        got = (t["name"], int(t["offset"]), tuple(int(s) for s in t["shape"]))
        assert got == (name, offset, shape), \
            f"tensor #{k}: layout JSON has {got}, oracle expects {(name, offset, shape)}"
    assert len(theirs) == len(mine), \
        f"layout JSON lists {len(theirs)} tensors, oracle expects {len(mine)}"


# ---------------------------------------------------------------------------
# The model, in plain torch ops.
# ---------------------------------------------------------------------------

def sinusoidal_positions(n, d, dtype):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(same)."""
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    col = torch.arange(d)
    i2 = (col - col % 2).to(torch.float64)  # 2i for both columns of a pair
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=torch.float64), i2 / d)
    pe = torch.where(col % 2 == 0, torch.sin(angle), torch.cos(angle))
    return pe.to(dtype)


def activate(name, z):
    if name == "relu":
        return torch.relu(z)
    if name == "gelu":
        return F.gelu(z)  # exact erf form
    if name == "gelu_tanh":
        return F.gelu(z, approximate="tanh")
    if name == "silu":
        return z * torch.sigmoid(z)
    raise ValueError(name)


def round_bf16(t):
    """t rounded as tfc rounds a matmul operand: its f32 value to the nearest
    bf16, ties to even; returned in t's dtype."""
    return t.to(torch.float32).to(torch.bfloat16).to(t.dtype)


class Bf16Matmul(torch.autograd.Function):
    """x @ w over bf16-rounded operands, in full precision; the backward
    matmuls round theirs too: dx = r(dy) r(w)^T, dw = r(x)^T r(dy)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return round_bf16(x) @ round_bf16(w)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        rdy = round_bf16(dy)
        dx = rdy @ round_bf16(w).t()
        rx = round_bf16(x).reshape(-1, x.shape[-1])
        dw = rx.t() @ rdy.reshape(-1, dy.shape[-1])
        return dx, dw


def linear_matmul(x, w, bf16):
    """x @ w (w [in, out]) as a linear layer of the spec multiplies."""
    return Bf16Matmul.apply(x, w) if bf16 else x @ w


class Linear(nn.Module):
    """y = x @ W + b with W stored [in, out] as in the flat buffer."""

    def __init__(self, n_in, n_out, bias, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n_in, n_out, dtype=dtype))
        self.bias = nn.Parameter(torch.zeros(n_out, dtype=dtype)) if bias else None
        self.bf16 = False  # Set by Oracle.set_bf16.

    def forward(self, x):
        y = linear_matmul(x, self.weight, self.bf16)
        return y + self.bias if self.bias is not None else y


class Norm(nn.Module):
    def __init__(self, cfg, dtype, width=None, kind=None):
        super().__init__()
        d = width or cfg.d_model
        self.kind, self.eps = kind or cfg.norm_type, cfg.eps
        if self.kind == "none":  # the identity, without weights
            return
        self.weight = nn.Parameter(torch.ones(d, dtype=dtype))
        self.bias = (nn.Parameter(torch.zeros(d, dtype=dtype))
                     if self.kind == "layernorm" else None)

    def forward(self, x):
        if self.kind == "none":
            return x
        if self.kind == "layernorm":  # biased variance, as F.layer_norm
            return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def alibi_slopes(n):
    """ALiBi's head slopes, the published rule (Press et al. 2022, the
    authors' get_slopes): a geometric sequence from 2^(-8/n) for a power of
    two; otherwise those of the largest power of two below n, then every
    other slope of twice that many heads."""
    def power_of_2(n):
        start = 2 ** (-2 ** -(math.log2(n) - 3))
        return [start * start ** i for i in range(n)]
    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + alibi_slopes(2 * closest)[0::2][:n - closest]


def rope(x, theta, rot, style):
    """RoFormer's rotation of [b, h, t, dh] at positions 0..t-1 (HF LLaMA's
    rotate_half for "half", GPT-J's pairs for "interleaved")."""
    t = x.shape[2]
    inv_freq = 1.0 / theta ** (torch.arange(0, rot, 2, dtype=torch.float64) / rot)
    angle = torch.arange(t, dtype=torch.float64)[:, None] * inv_freq[None, :]
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)  # [t, rot/2]
    xr, rest = x[..., :rot], x[..., rot:]
    if style == "half":
        x1, x2 = xr[..., :rot // 2], xr[..., rot // 2:]
        out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
    else:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        out = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin],
                          dim=-1).flatten(-2)
    return torch.cat([out, rest], dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg, dtype, self_attention=True):
        super().__init__()
        d = cfg.d_model
        # Cross-attention has its own K/V heads and head width.
        self.n_heads = cfg.n_heads
        self.head_dim = cfg.head_dim if self_attention else cfg.cross_head_dim
        self.n_kv_heads = cfg.n_kv_heads if self_attention else cfg.cross_n_kv_heads
        q, kv = cfg.n_heads * self.head_dim, self.n_kv_heads * self.head_dim
        self.wq = Linear(d, q, cfg.qkv_bias, dtype)
        self.wk = Linear(d, kv, cfg.qkv_bias, dtype)
        self.wv = Linear(d, kv, cfg.qkv_bias, dtype)
        self.wo = Linear(q, d, cfg.bias, dtype)
        self.qk_norm = cfg.qk_norm != "none"
        if self.qk_norm:
            self.q_norm = Norm(cfg, dtype, self.head_dim, cfg.qk_norm)
            self.k_norm = Norm(cfg, dtype, self.head_dim, cfg.qk_norm)
        self.rope = None
        if self_attention and cfg.attn_positions == "rope":
            self.rope = (cfg.rope_theta, cfg.rotary_dim, cfg.rope_style)
        self.window = cfg.sliding_window if self_attention else 0
        self.alibi = self_attention and cfg.attn_positions == "alibi"

    def forward(self, u, z, causal, key_valid=None):
        """key_valid: None, or bool [b, t] (False: a padded key, hidden from
        every query of its row)."""
        b, s, d = u.shape
        t = z.shape[1]
        h, g, dh = self.n_heads, self.n_kv_heads, self.head_dim
        q = self.wq(u).view(b, s, h, dh).transpose(1, 2)  # [b, h, s, dh]
        k = self.wk(z).view(b, t, g, dh).transpose(1, 2)  # [b, g, t, dh]
        v = self.wv(z).view(b, t, g, dh).transpose(1, 2)
        if self.qk_norm:  # Qwen3: per-head norm, then RoPE
            q, k = self.q_norm(q), self.k_norm(k)
        if self.rope:
            q, k = rope(q, *self.rope), rope(k, *self.rope)
        # Query head i reads K/V head i // (h / g) (HF's repeat_kv).
        k = k.repeat_interleave(h // g, dim=1)  # [b, h, t, dh]
        v = v.repeat_interleave(h // g, dim=1)
        scores = q @ k.transpose(-1, -2) / math.sqrt(dh)  # [b, h, s, t]
        i = torch.arange(s).view(s, 1)
        j = torch.arange(t).view(1, t)
        if self.alibi:  # -m_h |i - j|: the paper's -m_h (i - j) when causal
            m = torch.tensor(alibi_slopes(h), dtype=torch.float64).view(h, 1, 1)
            scores = scores - (m * (i - j).abs()).to(scores.dtype)
        hidden = torch.zeros(s, t, dtype=torch.bool)
        if causal:
            hidden |= j > i
        if self.window:
            hidden |= (i - j).abs() >= self.window
        empty = None
        if key_valid is not None:
            hidden = hidden | ~key_valid.view(b, 1, 1, t)  # [b, 1, s, t]
            # A padded query can see no valid key at all (a window beyond
            # its row's length): its attention is 0 here (any finite value
            # would do: padded rows never reach a valid row or the output).
            empty = hidden.all(-1, keepdim=True)
            hidden = hidden & ~empty
        scores = scores.masked_fill(hidden, float("-inf"))
        p = torch.softmax(scores, dim=-1)
        if empty is not None:
            p = p.masked_fill(empty, 0.0)
        o = (p @ v).transpose(1, 2).reshape(b, s, h * dh)
        return self.wo(o)


def ffn_hidden(activation, up, gate=None):
    """act(up), or act(gate) * up for a gated activation."""
    if activation in GATE_OF:
        return activate(GATE_OF[activation], gate) * up
    return activate(activation, up)


class FFN(nn.Module):
    """The dense FFN (width d_ff), or the shared experts' (a given width)."""

    def __init__(self, cfg, dtype, width=None):
        super().__init__()
        d, f = cfg.d_model, width or cfg.d_ff
        self.activation = cfg.activation
        if cfg.gated:
            self.w_gate = Linear(d, f, cfg.bias, dtype)
        self.w_up = Linear(d, f, cfg.bias, dtype)
        self.w_down = Linear(f, d, cfg.bias, dtype)

    def forward(self, u, key_valid=None):
        gate = self.w_gate(u) if self.activation in GATE_OF else None
        return self.w_down(ffn_hidden(self.activation, self.w_up(u), gate))


class ExpertLinear(nn.Module):
    """E linears stacked: weight [E, in, out] (each [in, out] as a dense
    linear's), bias [E, out]. forward(x [E, N, in]) -> [E, N, out], expert e
    on x[e]; its matmuls are linear matmuls (bf16 operands with dtype bf16)."""

    def __init__(self, experts, n_in, n_out, bias, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(experts, n_in, n_out, dtype=dtype))
        self.bias = (nn.Parameter(torch.zeros(experts, n_out, dtype=dtype))
                     if bias else None)
        self.bf16 = False  # Set by Oracle.set_bf16.

    def forward(self, x):
        y = torch.stack([linear_matmul(x[e], self.weight[e], self.bf16)
                         for e in range(self.weight.shape[0])])
        return y + self.bias[:, None, :] if self.bias is not None else y


class Experts(nn.Module):
    """The E routed experts: FFN_e(x) = act(x Wg_e + bg_e) * (x Wu_e + bu_e)
    @ Wd_e + bd_e (gated), act(x Wu_e + bu_e) @ Wd_e + bd_e (plain)."""

    def __init__(self, cfg, dtype):
        super().__init__()
        e, d, f = cfg.experts, cfg.d_model, cfg.d_ff
        self.activation = cfg.activation
        if cfg.gated:
            self.w_gate = ExpertLinear(e, d, f, cfg.bias, dtype)
        self.w_up = ExpertLinear(e, d, f, cfg.bias, dtype)
        self.w_down = ExpertLinear(e, f, d, cfg.bias, dtype)

    def forward(self, x):
        """x [N, d] -> [E, N, d]: every expert on every row."""
        xe = x.unsqueeze(0).expand(self.w_up.weight.shape[0], *x.shape)
        gate = self.w_gate(xe) if self.activation in GATE_OF else None
        return self.w_down(ffn_hidden(self.activation, self.w_up(xe), gate))


def route(p, k):
    """Each row's k experts: the k largest of p [N, E], ties to the lower
    expert index, in descending p (ties: lower index first). Returns (idx
    [N, k] long, gap [N] float64): gap is the relative distance between
    the k-th and the (k+1)-th largest probability, (p_k - p_k+1) / p_k
    (inf when k = E), the conditioning of the choice."""
    sorted_p, order = torch.sort(p.detach(), dim=-1, descending=True, stable=True)
    idx = order[:, :k]
    if k == p.shape[-1]:
        gap = torch.full(p.shape[:1], math.inf, dtype=torch.float64)
    else:
        top, nxt = sorted_p[:, k - 1].double(), sorted_p[:, k].double()
        gap = (top - nxt) / top
    return idx, gap


class MoE(nn.Module):
    """The mixture-of-experts FFN (docs/abi.md): for the FFN input u (one
    row per token), p = softmax(u @ router) over E; each valid token's top_k
    experts (route); gates g_j = p[e_j] (/ sum_j p[e_j] with renormalize);
    ffn(u) = sum_j g_j FFN_{e_j}(u) + shared(u). Padded tokens (key_valid
    False) are not routed: their routed output is 0 and they count nowhere.

    After forward: counts (int64 [E], valid tokens per expert), aux (the
    layer's load-balancing loss, a tensor with its gradient: alpha * E *
    sum_e f_e P_e, f_e = counts_e / T held constant, P_e the mean of p[:, e]
    over the T valid tokens; 0 when aux_loss = 0), gap (the smallest route
    gap over the valid tokens), p, idx, gates (per token, [b, s, ...])."""

    def __init__(self, cfg, dtype):
        super().__init__()
        self.n_experts, self.k = cfg.experts, cfg.top_k
        self.renormalize, self.alpha = cfg.renormalize, cfg.aux_loss
        self.router = Linear(cfg.d_model, cfg.experts, False, dtype)
        self.experts = Experts(cfg, dtype)
        if cfg.shared_experts:
            self.shared = FFN(cfg, dtype, cfg.shared_experts * cfg.d_ff)

    def forward(self, u, key_valid=None):
        b, s, d = u.shape
        E, k = self.n_experts, self.k
        x = u.reshape(b * s, d)
        valid = (torch.ones(b * s, dtype=torch.bool) if key_valid is None
                 else key_valid.reshape(b * s))
        p = torch.softmax(self.router(x), dim=-1)  # [N, E]
        idx, gap = route(p, k)
        sel = torch.gather(p, 1, idx)  # [N, k], the gradient flows through it
        gates = sel / sel.sum(-1, keepdim=True) if self.renormalize else sel
        gates = torch.where(valid[:, None], gates, torch.zeros_like(gates))
        outs = self.experts(x)  # [E, N, d]
        rows = torch.arange(b * s)
        routed = torch.zeros_like(x)
        for j in range(k):  # summed in the order j = 0..k-1
            routed = routed + gates[:, j:j + 1] * outs[idx[:, j], rows]
        chosen = torch.zeros(b * s, E, dtype=torch.bool)
        chosen[rows[:, None], idx] = True
        chosen &= valid[:, None]
        self.counts = chosen.sum(0)
        T = int(valid.sum())
        self.gap = float(gap[valid].min()) if T else math.inf
        if self.alpha > 0 and T:
            f = self.counts.to(p.dtype) / T  # a count: no gradient
            P = torch.where(valid[:, None], p, torch.zeros_like(p)).sum(0) / T
            self.aux = self.alpha * E * (f * P).sum()
        else:
            self.aux = torch.zeros((), dtype=p.dtype)
        self.p, self.idx = p.detach().view(b, s, E), idx.view(b, s, k)
        self.gates = gates.detach().view(b, s, k)
        out = routed.view(b, s, d)
        if hasattr(self, "shared"):
            out = out + self.shared(u)
        return out


def sinkhorn(logits, iters):
    """mHC's Sinkhorn-Knopp (Eq. 9): M0 = exp(logits), then `iters` times
    M = T_r(T_c(M)) (columns, then rows, each scaled to sum to 1), over the
    last two axes, unrolled (autograd differentiates every iteration).

    Each column's max is subtracted before exp: the first T_c cancels any
    column scaling of M0, so this is exactly exp(logits)'s result (and its
    gradient), without overflow."""
    m = torch.exp(logits - logits.detach().amax(dim=-2, keepdim=True))
    for _ in range(iters):
        m = m / m.sum(dim=-2, keepdim=True)
        m = m / m.sum(dim=-1, keepdim=True)
    return m


class HyperConnection(nn.Module):
    """Dynamic hyper-connections (Zhu et al. 2024, Eqs. 10-13; parameters as
    their Algorithm 2). forward(X [..., n, d]) -> (pre [..., n], post
    [..., n], res [..., n, n]): the layer input is sum_i pre_i X_i, the new
    stream j is sum_i res[j, i] X_i + post_j F (res = A_r^T)."""

    def __init__(self, cfg, dtype, init):
        super().__init__()
        self.eps = cfg.eps
        self.bf16 = False  # Set by Oracle.set_bf16.
        for name, value in init.items():
            setattr(self, name, nn.Parameter(torch.tensor(value, dtype=dtype)))

    def forward(self, x):
        # Eq. 10, each stream RMS-normalised over d; the 1/r applied after
        # the projections (linear matmuls: bf16 operands with dtype bf16).
        inv_r = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        dyn_alpha = linear_matmul(x, self.dynamic_alpha_fn, self.bf16) * inv_r
        dyn_beta = linear_matmul(x, self.dynamic_beta_fn[:, None], self.bf16)[..., 0] * \
            inv_r[..., 0]
        alpha = self.dynamic_alpha_scale * torch.tanh(dyn_alpha) + \
            self.static_alpha  # [A_m | A_r] (Eqs. 12, 13): [..., n, n + 1]
        beta = self.dynamic_beta_scale * torch.tanh(dyn_beta) + \
            self.static_beta  # B (Eq. 11): [..., n]
        return alpha[..., 0], beta, alpha[..., 1:].transpose(-1, -2)


class ManifoldHyperConnection(nn.Module):
    """mHC (Xie et al. 2025, Eqs. 7-9). forward(X [..., n, d]) -> (H_pre
    [..., n], H_post [..., n], H_res [..., n, n]) with x_{l+1} = H_res x_l +
    H_post^T F(H_pre x_l) (Eq. 3)."""

    def __init__(self, cfg, dtype, init):
        super().__init__()
        self.n, self.eps, self.iters = cfg.streams, cfg.eps, cfg.sinkhorn_iters
        self.bf16 = False  # Set by Oracle.set_bf16.
        for name, value in init.items():
            setattr(self, name, nn.Parameter(torch.tensor(value, dtype=dtype)))

    def forward(self, x):
        n = self.n
        # vec(x_l) [..., n d], RMSNorm'd (Eq. 7) with the 1/r after the
        # projection (Eqs. 14-19; a linear matmul: bf16 operands with dtype
        # bf16).
        v = x.flatten(-2)
        inv_r = torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + self.eps)
        t = linear_matmul(v, self.phi, self.bf16) * inv_r  # [..., n^2 + 2n]
        b, a = self.b, self.alpha
        pre = torch.sigmoid(a[0] * t[..., :n] + b[:n])
        post = 2 * torch.sigmoid(a[1] * t[..., n:2 * n] + b[n:2 * n])
        res = a[2] * t[..., 2 * n:] + b[2 * n:]
        res = sinkhorn(res.reshape(*res.shape[:-1], n, n), self.iters)
        return pre, post, res


class Block(nn.Module):
    def __init__(self, cfg, dtype, index=0):
        super().__init__()
        self.position, self.alpha = cfg.position, cfg.alpha
        self.residual = cfg.residual
        self.hyper = cfg.hyper
        self.causal = cfg.mask == "causal"
        sandwich = cfg.position == "sandwich"
        if cfg.hyper:  # one hyper-connection per sub-layer, at its paper init
            klass = ManifoldHyperConnection if cfg.mixing == "mhc" else HyperConnection
            for sub in hc_sublayers(cfg):
                setattr(self, sub + "_hc",
                        klass(cfg, dtype, hc_init_values(cfg, index, sub)))
        self.attn_norm = Norm(cfg, dtype)
        self.attn = Attention(cfg, dtype)
        if sandwich:
            self.attn_post_norm = Norm(cfg, dtype)
        self.has_cross = cfg.cross
        if cfg.cross:
            self.cross_norm = Norm(cfg, dtype)
            self.cross = Attention(cfg, dtype, self_attention=False)
            if sandwich:
                self.cross_post_norm = Norm(cfg, dtype)
        self.ffn_norm = Norm(cfg, dtype)
        self.ffn = MoE(cfg, dtype) if cfg.moe else FFN(cfg, dtype)
        if sandwich:
            self.ffn_post_norm = Norm(cfg, dtype)

    def _sublayer(self, x, norm, f, post_norm=None):
        # Without the residual the skip term is gone and nothing else.
        skip = x if self.residual else torch.zeros_like(x)
        if self.position == "pre":
            return skip + f(norm(x))
        if self.position == "sandwich":
            return skip + post_norm(f(norm(x)))
        # post: N(x + f(x)); deepnorm: N(alpha * x + f(x)).
        return norm(self.alpha * skip + f(x))

    def _hc_sublayer(self, x, hc, norm, f, post_norm=None):
        """x [b, s, n, d], the n streams. The layer reads u = H_pre x and
        returns H_res x + H_post^T F(u) (mHC Eq. 3; HC Eq. 2), where F(u) is
        f(N(u)) (pre), N_post(f(N(u))) (sandwich) or f(u) (post, deepnorm:
        N(alpha H_res x + H_post^T f(u)), N on each stream)."""
        pre, post, res = hc(x)
        u = torch.einsum("bsn,bsnd->bsd", pre, x)
        mixed = torch.einsum("bsij,bsjd->bsid", res, x)
        if self.position == "pre":
            out = f(norm(u))
        elif self.position == "sandwich":
            out = post_norm(f(norm(u)))
        else:
            out = f(u)
        if self.position in ("pre", "sandwich"):
            return mixed + post.unsqueeze(-1) * out.unsqueeze(-2)
        return norm(self.alpha * mixed + post.unsqueeze(-1) * out.unsqueeze(-2))

    def forward(self, x, enc=None, key_valid=None):
        """x [b, s, d], or [b, s, n, d] with streams n > 1."""
        post = lambda name: getattr(self, name, None)
        if self.hyper:
            sub = lambda h, name, norm, f: self._hc_sublayer(
                h, getattr(self, name + "_hc"), norm, f, post(name + "_post_norm"))
        else:
            sub = lambda h, name, norm, f: self._sublayer(
                h, norm, f, post(name + "_post_norm"))
        h = sub(x, "attn", self.attn_norm, lambda u: self.attn(u, u, self.causal, key_valid))
        if self.has_cross:
            # Cross-attention is never masked (nor by the lengths: they
            # pad the queries' sequence, not enc).
            h = sub(h, "cross", self.cross_norm, lambda u: self.cross(u, enc, False))
        return sub(h, "ffn", self.ffn_norm, lambda u: self.ffn(u, key_valid))


class Embedding(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        self.tokens = nn.Parameter(torch.zeros(cfg.vocab, cfg.d_model, dtype=dtype))
        if cfg.positions == "learned":
            self.positions = nn.Parameter(torch.zeros(cfg.max_seq, cfg.d_model, dtype=dtype))
        if cfg.embed_norm:  # BERT's embeddings.LayerNorm
            self.norm = Norm(cfg, dtype)


class Head(nn.Module):
    def __init__(self, cfg, dtype):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(cfg.d_model, cfg.vocab, dtype=dtype))


def cross_entropy_mean(logits, targets, valid=None):
    """Mean over targets in [0, vocab) of -log softmax(logits)[target]; 0 if
    none. valid: None, or bool [b, s] (False: a padded position, ignored)."""
    counted = (targets >= 0) & (targets < logits.shape[-1])
    valid = counted if valid is None else counted & valid
    safe = torch.where(valid, targets, torch.zeros_like(targets)).long()
    logp = logits - torch.logsumexp(logits, dim=-1, keepdim=True)
    nll = -torch.gather(logp, -1, safe.unsqueeze(-1)).squeeze(-1)
    nll = torch.where(valid, nll, torch.zeros_like(nll))
    count = valid.sum()
    return nll.sum() / torch.clamp(count, min=1).to(logits.dtype)


class Oracle(nn.Module):
    """The reference model of one spec; parameters named as in the ABI."""

    def __init__(self, cfg, dtype=torch.float64):
        super().__init__()
        self.cfg, self.dtype = cfg, dtype
        if cfg.has_embedding:
            self.embed = Embedding(cfg, dtype)
        self.blocks = nn.ModuleList(Block(cfg, dtype, i) for i in range(cfg.depth))
        if cfg.final:
            self.final_norm = Norm(cfg, dtype)
        if cfg.has_head and not cfg.tied:
            self.head = Head(cfg, dtype)
        layout, self.param_count = compute_layout(cfg)
        self.layout = layout
        # Every registered parameter is in the layout and vice versa.
        registered = {n for n, _ in self.named_parameters()}
        listed = {n for n, _, _ in layout}
        assert registered == listed, (registered ^ listed)
        for name, _, shape in layout:
            assert tuple(self.get_parameter(name).shape) == shape, name
        self.set_bf16(cfg.linear_dtype == "bf16")

    def set_bf16(self, bf16):
        """Rounds the linear layers' matmul operands to bf16 (the spec's
        dtype; False gives the f32 model of the same parameters)."""
        self.bf16 = bf16
        for m in self.modules():
            if isinstance(m, (Linear, ExpertLinear, HyperConnection,
                              ManifoldHyperConnection)):
                m.bf16 = bf16

    @classmethod
    def from_file(cls, path, dtype=torch.float64):
        return cls(Config.from_file(path), dtype)

    # -- parameters -------------------------------------------------------

    def load_flat(self, params, layout_json=None):
        """Assigns every parameter from the flat f32 buffer `params`.

        With `layout_json` (a path or dict from `tfc --emit=layout`), first
        asserts that it agrees with the oracle's own layout."""
        if layout_json is not None:
            check_layout_json(self.cfg, layout_json)
        flat = np.asarray(params, dtype=np.float32).reshape(-1)
        if flat.size != self.param_count:
            raise ValueError(f"flat buffer has {flat.size} floats, "
                             f"the layout needs {self.param_count}")
        with torch.no_grad():
            for name, offset, shape in self.layout:
                n = math.prod(shape)
                chunk = torch.from_numpy(flat[offset:offset + n].copy())
                self.get_parameter(name).copy_(chunk.view(shape).to(self.dtype))

    def flat_params(self):
        """The parameters as one flat float64 numpy array (ABI layout)."""
        return self._flatten(lambda p: p.detach())

    def flat_grad(self):
        """The gradients (after backward) in the ABI layout; zeros if None."""
        return self._flatten(lambda p: p.grad if p.grad is not None
                             else torch.zeros_like(p))

    def _flatten(self, get):
        out = np.zeros(self.param_count, dtype=np.float64)
        for name, offset, shape in self.layout:
            t = get(self.get_parameter(name))
            out[offset:offset + math.prod(shape)] = t.detach().reshape(-1).double().numpy()
        return out

    # -- forward ----------------------------------------------------------

    def _tensor(self, a, dtype):
        if isinstance(a, torch.Tensor):
            return a.to(dtype)
        return torch.from_numpy(np.ascontiguousarray(a)).to(dtype)

    def positions_valid(self, lengths, b, s):
        """bool [b, s]: position i of row b is valid when i < lengths[b]."""
        if not self.cfg.key_padding:
            if lengths is not None:
                raise ValueError("lengths given, but the spec has no "
                                 "[attention] key_padding")
            return None
        if lengths is None:
            raise ValueError("[attention] key_padding spec needs lengths [batch]")
        lengths = torch.as_tensor(np.asarray(lengths)).reshape(-1).long()
        if lengths.numel() != b:
            raise ValueError(f"lengths has {lengths.numel()} entries, batch is {b}")
        bad = (lengths < 1) | (lengths > s)
        if bad.any():
            k = int(bad.nonzero()[0, 0])
            raise ValueError(f"lengths[{k}] = {int(lengths[k])} is outside [1, {s}]")
        return torch.arange(s).view(1, s) < lengths.view(b, 1)

    def forward(self, inp, enc=None, targets=None, lengths=None):
        """inp: tokens [b, s] (int) with [embedding], else x [b, s, d];
        lengths [b] (ints in [1, s]) with [attention] key_padding, else None.

        Returns the ABI outputs in order: (y,) or (logits,) or (logits, loss)."""
        cfg = self.cfg
        if cfg.has_embedding:
            tokens = self._tensor(inp, torch.long)
            b, s = tokens.shape
            if s > cfg.max_seq:
                raise ValueError("seq > max_seq")
            h = self.embed.tokens[tokens]
            if cfg.positions == "learned":
                h = h + self.embed.positions[:s]
            elif cfg.positions == "sinusoidal":
                h = h + sinusoidal_positions(s, cfg.d_model, self.dtype)
            if cfg.embed_norm:
                h = self.embed.norm(h)
        else:
            h = self._tensor(inp, self.dtype)
        valid = self.positions_valid(lengths, h.shape[0], h.shape[1])
        if cfg.cross:
            if enc is None:
                raise ValueError("cross-attention spec needs enc")
            enc = self._tensor(enc, self.dtype)
        # The hidden_norms probe (docs/abi.md): the mean over (unpadded)
        # positions of each row's L2 norm, before the blocks and after each.
        def mean_row_norm(t):
            norms = t.detach().double().norm(dim=-1)
            if valid is not None:
                return float(norms[valid].mean())
            return float(norms.mean())
        # Hyper-connections: the embedding output (or x) copied to the n
        # streams [b, s, n, d]; after the last block the streams summed (HC's
        # Algorithm 1), before final_norm. hidden_norms probes the sum.
        n = cfg.streams
        merged = (lambda t: t) if n == 1 else (lambda t: t.sum(dim=-2))
        if n > 1:
            h = h.unsqueeze(-2).expand(*h.shape[:-1], n, h.shape[-1])
        # stream_norms (streams > 1): each stream's, [depth + 1, n].
        def stream_row_norms(t):
            return [mean_row_norm(t[..., i, :]) for i in range(n)] if n > 1 else []
        self.hidden_norms = [mean_row_norm(merged(h))]
        self.stream_norms = [stream_row_norms(h)]
        for block in self.blocks:
            h = block(h, enc, valid)
            self.hidden_norms.append(mean_row_norm(merged(h)))
            self.stream_norms.append(stream_row_norms(h))
        h = merged(h)
        # MoE: the expert_counts probe, each layer's load-balancing loss and
        # the routing's conditioning (min_route_gap, see route()).
        moes = [block.ffn for block in self.blocks if isinstance(block.ffn, MoE)]
        self.expert_counts = (np.stack([m.counts.numpy() for m in moes]).astype(np.int32)
                              if moes else None)
        self.aux_losses = [m.aux for m in moes]
        self.route_gaps = [m.gap for m in moes]
        self.min_route_gap = min(self.route_gaps, default=math.inf)
        if cfg.final:
            h = self.final_norm(h)
        # Padded rows of the output are exactly 0 (and so is their gradient).
        pad = (lambda t: t) if valid is None else \
            (lambda t: torch.where(valid.unsqueeze(-1), t, torch.zeros_like(t)))
        if not cfg.has_head:
            return (pad(h),)
        w = self.embed.tokens.t() if cfg.tied else self.head.weight
        logits = pad(linear_matmul(h, w, self.bf16))
        if not cfg.has_loss:
            return (logits,)
        if targets is None:
            raise ValueError("cross_entropy spec needs targets")
        loss = cross_entropy_mean(logits, self._tensor(targets, torch.long), valid)
        if cfg.aux_loss > 0:  # + each layer's load-balancing loss, in order
            for aux in self.aux_losses:
                loss = loss + aux
        return logits, loss

    def probe_outputs(self):
        """The last forward's probe outputs by name (cfg.probe_names()):
        hidden_norms float64 [depth + 1], expert_counts int32 [depth, E]."""
        out = {"hidden_norms": np.asarray(self.hidden_norms, dtype=np.float64),
               "stream_norms": np.asarray(self.stream_norms, dtype=np.float64),
               "expert_counts": self.expert_counts}
        return {n: out[n] for n in self.cfg.probe_names()}

    def route_gap(self, inp, enc=None, targets=None, lengths=None):
        """The smallest relative gap between a valid token's k-th and
        (k+1)-th router probability over every MoE layer of a forward on
        these inputs (inf without MoE or with top_k = experts). tfc routes
        from f32 (or bf16-operand) logits: below ~1e-5 (bf16: ~1e-2) its
        choice may differ from the oracle's, and such a case should be
        redrawn rather than compared."""
        with torch.no_grad():
            self(inp, enc, targets, lengths)
        return self.min_route_gap


# ---------------------------------------------------------------------------
# Command line: print the layout, or run forward on .bin files.
# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("spec")
    ap.add_argument("--layout-json", help="cross-check a tfc --emit=layout file")
    ap.add_argument("--params", help="flat f32 parameter file")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--seq", type=int, default=1)
    ap.add_argument("--enc-seq", type=int, default=1)
    ap.add_argument("--dir", help="reads x.bin/tokens.bin/lengths.bin/enc.bin/"
                    "targets.bin, writes oracle_<output>.bin")
    ap.add_argument("--float32", action="store_true")
    args = ap.parse_args(argv)

    cfg = Config.from_file(args.spec)
    layout, count = compute_layout(cfg)
    if args.layout_json:
        check_layout_json(cfg, args.layout_json)
        print("layout JSON agrees")
    if not args.params:
        print(json.dumps({k: v for k, v in vars(cfg).items()}, indent=1))
        for name, offset, shape in layout:
            print(f"{offset:10d} {name} {list(shape)}")
        print(f"param_count {count}")
        return 0

    model = Oracle(cfg, torch.float32 if args.float32 else torch.float64)
    model.load_flat(np.fromfile(args.params, dtype=np.float32))
    b, s, t, d = args.batch, args.seq, args.enc_seq, cfg.d_model
    rd = lambda n, dt, shape: np.fromfile(os.path.join(args.dir, n), dtype=dt).reshape(shape)
    inp = (rd("tokens.bin", np.int32, (b, s)) if cfg.has_embedding
           else rd("x.bin", np.float32, (b, s, d)))
    lengths = rd("lengths.bin", np.int32, (b,)) if cfg.key_padding else None
    enc = rd("enc.bin", np.float32, (b, t, d)) if cfg.cross else None
    tgt = rd("targets.bin", np.int32, (b, s)) if cfg.has_loss else None
    with torch.no_grad():
        outs = model(inp, enc, tgt, lengths)
    for name, out in zip(cfg.output_names(), outs):
        out.to(torch.float32).numpy().tofile(os.path.join(args.dir, f"oracle_{name}.bin"))
        print(name, tuple(out.shape))
    for name, out in model.probe_outputs().items():
        out.astype(np.int32 if name == "expert_counts" else np.float32).tofile(
            os.path.join(args.dir, f"oracle_{name}.bin"))
        print(name, out.shape)
    if cfg.moe:
        print(f"min_route_gap {model.min_route_gap:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
