#!/usr/bin/python3
"""Conformance of tfc-generated forward and backward passes against the PyTorch oracle.

For every spec of a matrix (all norm type x position x activation x mask
blocks, cross-attention variants, embeddings and heads with and without
loss, odd widths) this script

  1. writes the spec TOML, runs `tfc spec.toml -o NAME.o` and
     `tfc spec.toml --emit=layout -o NAME.json`, and checks the layout JSON
     against the oracle's own layout (oracle.py reads only the TOML);
  2. compiles harness/harness.c against NAME.h / NAME.o / libtfc_runtime;
  3. runs the harness without params.bin (NAME_init), checks that init is
     deterministic for a seed, finite, and that the header's macros and
     tensor table agree with the oracle; compares that forward with the oracle;
  4. perturbs the parameters (so zero biases or unit norm weights cannot hide
     a layout mistake) and, for several (batch, seq[, enc_seq], threads),
     writes random inputs, runs the harness and compares every output with
     the float64 oracle: max|out - ref| <= rtol * max(1, max|ref|);
  5. checks that out-of-range batch / seq are rejected with TFC_ERR_BAD_SHAPE;
  6. gradients: for a few (batch, seq[, enc_seq], threads) runs forward and
     NAME_backward (harness -b) and compares every parameter gradient and
     the input gradients d_x / d_enc with float64 autograd of the oracle,
     starting from the model's loss, or else from loss := sum(out * d_out)
     for a random d_y / d_logits. Metric per tensor: max|ours - ref| /
     max(max|ref|, floor); bound --grad-rtol (1e-3). The case line names the
     worst tensor. The harness also checks backward's status codes (NULL
     pointers, bad shapes) and that it leaves params alone;
  7. accumulation (harness -a, one shape): forward + backward twice into the
     same buffers; d_params must double, d_x / d_enc must not change.
  8. with --compare-unfused, also compiles the spec with `--no-fusion` and runs
     both objects on the same inputs for every gradient shape: every output
     and gradient of the fused build must match the unfused one within
     --fusion-rtol (1e-5), max|fused - unfused| / max(max|unfused|, 1e-3)
     per output and per gradient tensor. Gradients that vanish in exact
     arithmetic (the oracle's tensor is below the GRAD_FLOOR of its buffer:
     the key bias, ...) are round-off in both builds; they are held to the
     oracle by step 6, not to each other.
  9. [attention] key_padding specs (pad_*): lengths.bin per case (lengths_for),
     padded output and d_x rows exactly 0, padding-invariance and
     grad-padded-targets-only (Runner.check_padding); the harness checks the
     lengths' status codes and messages.
 10. mixture-of-experts specs (moe_*, [ffn] experts): every random input is
     drawn again (a NOTE line says so) while some valid token's k-th and
     (k+1)-th router probabilities lie within --moe-min-gap (relative; bf16:
     --moe-min-gap-bf16) of each other in the oracle, where tfc's f32 (or
     bf16-operand) routing may choose otherwise (Oracle.route_gap). With a
     load-balancing loss (aux_loss > 0) the loss without valid targets is
     that loss alone: grad-no-targets and grad-padded-targets-only compare
     it and its gradients with the oracle instead of 0. A spec with
     [probes] expert_counts runs steps 1-9 without the probe (the harness
     calls forward with the ABI's fixed outputs), then builds it with the
     probe through python/tfc (--emit=shared; CPU only) and compares forward's
     outputs and int32 expert_counts[depth][experts] (exactly) and backward's
     gradients with the oracle (Runner.check_expert_counts).

With --cuda every build targets CUDA (device arrays, the harness copies in
and out around each call): the same oracle and bounds judge the GPU kernels,
on a GPU or, with --tfc naming the test tool tfc-emu, on the CPU emulator.

Prints one line per case, the worst errors of the run, and finally
`N passed, M failed`; exits 1 on any failure. Example:

  test/Numerics/conformance.py --tfc build/bin/tfc --runtime-lib build/lib \\
      --include runtime/include --quick -j 2 --keep /tmp/conf
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

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np
import torch

from oracle import (ACTIVATIONS, Config, Oracle, check_layout_json, compute_layout,
                    hc_init_values, hc_sublayers)

HARNESS = os.path.join(HERE, "harness", "harness.c")
BAD_SHAPE = 2  # TFC_ERR_BAD_SHAPE

# Gradient metric: per tensor, max|ours - ref| / max(max|ref|, floor) with
# floor = GRAD_FLOOR * (max|ref| over the whole gradient buffer) (and at
# least TINY). A plain max|ref| would divide by zero (or by 1e-18) for
# gradients that vanish identically: the key bias (softmax is invariant to
# adding q.bk to a whole row of scores), wq / wk at seq 1 under a causal mask
# (one key: the softmax is constant 1). There our f32 backward leaves
# rounding noise of the cancelled terms, ~1e-7 of the buffer's scale; the
# floor judges such tensors against 1e-3 of the buffer's largest gradient.
GRAD_FLOOR = 1e-3
TINY = 1e-30
# MoE: how often a case's random inputs are drawn again when their routing
# is near a tie (Runner.write_inputs).
MOE_REDRAWS = 30

# ---------------------------------------------------------------------------
# The spec matrix.
# ---------------------------------------------------------------------------

NORMS = ("layernorm", "rmsnorm", "none")
POSITIONS = ("pre", "post", "deepnorm", "sandwich")
MASKS = ("causal", "bidirectional")
SHORT = {"layernorm": "ln", "rmsnorm": "rms", "causal": "c", "bidirectional": "bi",
         "learned": "learned", "sinusoidal": "sin", "none": "nopos"}
NORM_SHORT = {"layernorm": "ln", "rmsnorm": "rms", "none": "nonorm"}


def block_name(norm, pos, act, mask):
    return f"blk_{NORM_SHORT[norm]}_{pos}_{act}_{SHORT[mask]}"


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def make_toml(name, sections):
    lines = [f'name = "{name}"']
    for section, table in sections.items():
        if table is None:
            continue
        lines.append(f"\n[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


class SpecCase:
    def __init__(self, name, sections, quick=False, long_only=False):
        # long_only: run by conformance-long.test (all_specs without
        # --pairwise), not by CI's conformance.test.
        self.name, self.quick, self.long_only = name, quick, long_only
        # [probes] expert_counts: the harness runs the spec without it (its
        # forward call has the fixed outputs), check_expert_counts with it.
        self.probe_toml = None
        if sections.get("probes", {}).get("expert_counts"):
            self.probe_toml = make_toml(name, sections)
            probes = {k: v for k, v in sections["probes"].items() if k != "expert_counts"}
            sections = dict(sections, probes=probes or None)
        self.toml = make_toml(name, sections)
        self.cfg = Config.from_string(self.toml)  # the oracle's reading
        self.max_batch = sections["model"]["max_batch"]
        self.bf16 = self.cfg.linear_dtype == "bf16"


def block_specs():
    """All 3 x 4 x 7 x 2 = 168 block combinations; widths and options vary
    with the index so that defaults, bias = false and odd d_ff get covered.
    The first 84 (layernorm and rmsnorm at pre, post and deepnorm) keep the
    indices they had before sandwich and none joined the matrix."""
    specs = []
    i = 0
    old = [(n, p) for n in NORMS[:2] for p in POSITIONS[:3]]
    combos = old + [(n, p) for n in NORMS for p in POSITIONS if (n, p) not in old]
    for norm, pos in combos:
        for act in ACTIVATIONS:
            for mask in MASKS:
                gated = act in ("swiglu", "geglu", "reglu")
                model = {"d_model": 32, "n_heads": 4, "depth": 2, "max_seq": 64,
                         "max_batch": 4, "bias": i % 5 != 3}
                ffn = {"activation": act}
                if i % 3 == 1:
                    model["d_ff"] = 72 if not gated else 48
                elif gated and i % 3 == 2:
                    ffn["multiple_of"] = 32  # int(8*32/3) = 85 -> 96
                # else: the defaults (128, or 256 for gated).
                norm_t = {"type": norm, "position": pos}
                # Type none has no eps to set and no final norm.
                ends_normed = pos in ("pre", "sandwich")
                if i % 4 == 2 and norm != "none":
                    norm_t["eps"] = 1e-6
                if not ends_normed and i % 6 == 5 and norm != "none":
                    norm_t["final"] = True
                if ends_normed and i % 6 == 4:
                    norm_t["final"] = False
                name = block_name(norm, pos, act, mask)
                specs.append((name, {"model": model, "norm": norm_t, "ffn": ffn,
                                     "attention": {"mask": mask}}))
                i += 1
    # --quick: 7 blocks that still cover every activation, layernorm and
    # rmsnorm, pre, post, deepnorm and mask; and 3 with sandwich and none.
    quick = {block_name(NORMS[k % 2], POSITIONS[k % 3], ACTIVATIONS[k],
                        MASKS[(k // 2) % 2]) for k in range(7)}
    quick |= {block_name("rmsnorm", "sandwich", "swiglu", "causal"),
              block_name("layernorm", "sandwich", "gelu", "bidirectional"),
              block_name("none", "pre", "relu", "causal")}
    return [SpecCase(n, s, n in quick) for n, s in specs]


def cross_specs():
    specs = []
    acts = ("gelu", "swiglu", "relu", "gelu_tanh", "silu", "geglu")
    k = 0
    for pos in POSITIONS[:3]:  # sandwich and none: ablation_specs
        for norm in NORMS[:2]:
            name = f"cross_{SHORT[norm]}_{pos}"
            model = {"d_model": 32, "n_heads": 4, "depth": 2, "max_seq": 64, "max_batch": 4,
                     "d_ff": 64}
            specs.append(SpecCase(name, {
                "model": model, "norm": {"type": norm, "position": pos},
                "ffn": {"activation": acts[k]},
                "attention": {"mask": MASKS[k % 2], "cross": True}},
                quick=name in ("cross_ln_pre", "cross_rms_deepnorm")))
            k += 1
    specs.append(SpecCase("cross_deepnorm_alpha", {
        "model": {"d_model": 24, "n_heads": 2, "depth": 3, "max_seq": 64, "max_batch": 4,
                  "d_ff": 40, "bias": False},
        "norm": {"position": "deepnorm", "deepnorm_alpha": 1.3, "final": True},
        "ffn": {"activation": "reglu"}, "attention": {"cross": True}}))
    # Cross-attention with its own K/V heads and head width: multi-query of
    # width 6 beside self-attention's GQA of width 8, with QK-norm.
    specs.append(SpecCase("cross_heads_mqa_qknorm", {
        "model": {"d_model": 32, "n_heads": 4, "depth": 2, "max_seq": 64, "max_batch": 4,
                  "d_ff": 48},
        "norm": {"type": "rmsnorm"},
        "attention": {"cross": True, "n_kv_heads": 2, "cross_n_kv_heads": 1,
                      "cross_head_dim": 6, "qk_norm": "rmsnorm"}}, quick=True))
    specs.append(SpecCase("cross_heads_wide_padded", {
        "model": {"d_model": 24, "n_heads": 2, "depth": 2, "max_seq": 64, "max_batch": 4,
                  "d_ff": 40},
        "norm": {"position": "post"},
        "attention": {"mask": "bidirectional", "cross": True, "cross_head_dim": 20,
                      "key_padding": True}}))
    return specs


def lm_specs():
    base = {"d_model": 32, "n_heads": 4, "depth": 2, "max_seq": 64, "max_batch": 4}
    rows = [  # name, positions, tied, loss, norm, extra
        ("lm_learned_untied_ce", "learned", False, "cross_entropy",
         {"position": "pre"}, {"ffn": {"activation": "gelu_tanh"}}, True),
        ("lm_sin_tied_ce", "sinusoidal", True, "cross_entropy",
         {"type": "rmsnorm"}, {"ffn": {"activation": "swiglu", "multiple_of": 16}}, True),
        ("lm_nopos_untied_logits", "none", False, "none",
         {"position": "post"}, {"attention": {"mask": "bidirectional"}}, True),
        ("lm_learned_tied_logits", "learned", True, "none",
         {"type": "rmsnorm", "position": "deepnorm"}, {"ffn": {"activation": "silu"}}, False),
        ("lm_sin_untied_ce_nofinal", "sinusoidal", False, "cross_entropy",
         {"final": False}, {"ffn": {"activation": "relu"}}, False),
        ("lm_nopos_tied_ce_post_final", "none", True, "cross_entropy",
         {"position": "post", "final": True}, {"ffn": {"activation": "geglu", "multiple_of": 8}},
         False),
    ]
    specs = []
    for name, positions, tied, loss, norm, extra, quick in rows:
        secs = {"model": dict(base), "norm": norm,
                "embedding": {"vocab": 50, "positions": positions},
                "head": {"tied": tied, "loss": loss}}
        secs.update(extra)
        specs.append(SpecCase(name, secs, quick))
    specs.append(SpecCase("embed_nohead", {
        "model": dict(base), "embedding": {"vocab": 37, "positions": "sinusoidal"}}))
    specs.append(SpecCase("lm_cross_ce", {
        "model": dict(base, d_ff=48), "norm": {"type": "rmsnorm"},
        "ffn": {"activation": "swiglu"}, "attention": {"cross": True},
        "embedding": {"vocab": 61, "positions": "learned"},
        "head": {"loss": "cross_entropy"}}, quick=True))
    # [embedding] norm: BERT's embedding LayerNorm (post-LN, padded, no
    # head), and an RMSNorm one under a tied head.
    # attention.qkv_bias: Qwen2's q/k/v biases without the others (GQA, RoPE,
    # merged projections), and the reverse.
    specs.append(SpecCase("qkvbias_qwen2_lm", {
        "model": dict(base, d_ff=48, bias=False), "norm": {"type": "rmsnorm"},
        "ffn": {"activation": "swiglu"},
        "attention": {"qkv_bias": True, "n_kv_heads": 2, "positions": "rope"},
        "embedding": {"vocab": 31, "positions": "none"},
        "head": {"loss": "cross_entropy"}}, quick=True))
    specs.append(SpecCase("qkvbias_off_cross", {
        "model": dict(base, d_ff=40), "norm": {"position": "post"},
        "attention": {"qkv_bias": False, "cross": True},
        "embedding": {"vocab": 23, "positions": "learned"}}))
    specs.append(SpecCase("embnorm_bert_padded", {
        "model": dict(base, d_ff=48), "norm": {"position": "post", "eps": 1e-12},
        "ffn": {"activation": "gelu"},
        "attention": {"mask": "bidirectional", "key_padding": True},
        "embedding": {"vocab": 43, "positions": "learned", "norm": True}}, quick=True))
    specs.append(SpecCase("embnorm_rms_tied_ce", {
        "model": dict(base), "norm": {"type": "rmsnorm"},
        "ffn": {"activation": "swiglu", "multiple_of": 16},
        "attention": {"positions": "rope"},
        "embedding": {"vocab": 29, "positions": "none", "norm": True},
        "head": {"tied": True, "loss": "cross_entropy"}}))
    return specs


def odd_specs():
    return [
        SpecCase("odd_dh15_depth3", {  # head width 15, d_ff 50, max_seq 40
            "model": {"d_model": 30, "n_heads": 2, "d_ff": 50, "depth": 3, "max_seq": 40,
                      "max_batch": 3},
            "ffn": {"activation": "gelu"}}, quick=True),
        SpecCase("odd_dh4_depth1", {  # 5 heads of width 4, one block, bidirectional
            "model": {"d_model": 20, "n_heads": 5, "d_ff": 36, "max_seq": 33, "max_batch": 2},
            "norm": {"type": "rmsnorm", "position": "post", "eps": 1e-4},
            "ffn": {"activation": "reglu"}, "attention": {"mask": "bidirectional"}}),
        SpecCase("odd_one_head_wide", {  # one head of width 64
            "model": {"d_model": 64, "n_heads": 1, "depth": 2, "max_seq": 64, "max_batch": 4,
                      "bias": False},
            "ffn": {"activation": "silu"}}),
        SpecCase("odd_dh128_cross", {  # one head of width 128, cross-attention
            "model": {"d_model": 128, "n_heads": 1, "d_ff": 64, "max_seq": 40, "max_batch": 2},
            "attention": {"cross": True}}, quick=True),
        SpecCase("odd_dh192_bi", {  # two heads of width 192, bidirectional, RMSNorm
            "model": {"d_model": 384, "n_heads": 2, "d_ff": 64, "max_seq": 40, "max_batch": 2},
            "norm": {"type": "rmsnorm"}, "attention": {"mask": "bidirectional"}}),
        SpecCase("odd_lm_vocab1", {  # a vocabulary of one token
            "model": {"d_model": 16, "n_heads": 2, "d_ff": 16, "max_seq": 17, "max_batch": 2},
            "embedding": {"vocab": 1}, "head": {"loss": "cross_entropy"}}),
    ]


def bf16_specs():
    """dtype = "bf16": the linear layers multiply bf16-rounded operands
    (every matmul of forward and backward), judged against the oracle's
    rounded model with bf16's bounds, and against its f32 model to show the
    rounding happens (see check_bf16_rounding)."""
    base = {"d_model": 64, "n_heads": 4, "depth": 2, "max_seq": 64, "max_batch": 4,
            "dtype": "bf16"}
    return [
        SpecCase("bf16_ln_pre_gelu", {"model": dict(base), "ffn": {"activation": "gelu"}},
                 quick=True),
        SpecCase("bf16_rms_pre_swiglu_cross", {
            "model": dict(base, d_ff=96), "norm": {"type": "rmsnorm"},
            "ffn": {"activation": "swiglu"}, "attention": {"cross": True}}, quick=True),
        SpecCase("bf16_ln_post_relu_bi", {  # odd widths: tails in every dimension
            "model": dict(base, d_model=40, n_heads=5, d_ff=72, bias=False),
            "norm": {"position": "post"}, "ffn": {"activation": "relu"},
            "attention": {"mask": "bidirectional"}}),
        SpecCase("bf16_lm_tied_ce", {
            "model": dict(base), "norm": {"type": "rmsnorm", "position": "deepnorm"},
            "ffn": {"activation": "geglu", "multiple_of": 16},
            "embedding": {"vocab": 70, "positions": "learned"},
            "head": {"tied": True, "loss": "cross_entropy"}}, quick=True),
    ]


def head_specs():
    """[attention] n_kv_heads (grouped-query, multi-query) and head_dim (a
    query width other than d_model), crossed with the norms, masks,
    cross-attention, the LM head and bf16."""
    base = {"d_model": 32, "n_heads": 4, "depth": 2, "max_seq": 64, "max_batch": 4}
    return [
        SpecCase("gqa_ln_pre_causal", {  # 4 query heads share 2 K/V heads
            "model": dict(base), "ffn": {"activation": "gelu"},
            "attention": {"n_kv_heads": 2}}, quick=True),
        SpecCase("mqa_rms_post_bi", {  # one K/V head for all 4
            "model": dict(base, d_ff=48), "norm": {"type": "rmsnorm", "position": "post"},
            "ffn": {"activation": "swiglu"},
            "attention": {"mask": "bidirectional", "n_kv_heads": 1}}),
        SpecCase("headdim_wide_deepnorm", {  # 3 heads of 16: q is 48 wide, d_model 24
            "model": dict(base, d_model=24, n_heads=3, d_ff=40, bias=False),
            "norm": {"position": "deepnorm"}, "ffn": {"activation": "relu"},
            "attention": {"head_dim": 16}}, quick=True),
        SpecCase("gqa_headdim_cross", {  # 6 heads of 5 in 3 groups, d_model 32
            "model": dict(base, n_heads=6, d_ff=40), "norm": {"type": "rmsnorm"},
            "ffn": {"activation": "geglu", "multiple_of": 8},
            "attention": {"cross": True, "n_kv_heads": 3, "head_dim": 5}}, quick=True),
        SpecCase("gqa_lm_tied_ce", {  # LLaMA-like: RMSNorm, SwiGLU, no biases
            "model": dict(base, n_heads=8, bias=False), "norm": {"type": "rmsnorm"},
            "ffn": {"activation": "swiglu", "multiple_of": 16},
            "attention": {"n_kv_heads": 2, "head_dim": 8},
            "embedding": {"vocab": 45, "positions": "none"},
            "head": {"tied": True, "loss": "cross_entropy"}}),
        SpecCase("gqa_bf16", {
            "model": dict(base, dtype="bf16"), "attention": {"n_kv_heads": 2}}),
        # Heads of 16 (whole vectors): the projections store Q, K and V per
        # head (no split_heads copies), tiles of rows crossing sequence ends
        # at s = 17; grouped-query heads, causal, padded keys.
        SpecCase("gqa_heads16_padded", {
            "model": dict(base, d_model=48, d_ff=64),
            "attention": {"n_kv_heads": 2, "head_dim": 16, "key_padding": True},
            "embedding": {"vocab": 41, "positions": "learned"}}, quick=True),
    ]


def position_specs():
    """[attention] qk_norm and RoPE (positions, rope_theta, rope_style,
    rope_fraction), crossed with grouped-query heads, head_dim, the norms
    and their positions, both masks, cross-attention (RoPE: self-attention
    only), the LM head and bf16."""
    base = {"d_model": 32, "n_heads": 4, "depth": 2, "max_seq": 64, "max_batch": 4}
    return [
        SpecCase("rope_llama", {  # RMSNorm, SwiGLU, no biases, GQA, RoPE
            "model": dict(base, bias=False), "norm": {"type": "rmsnorm"},
            "ffn": {"activation": "swiglu", "multiple_of": 16},
            "attention": {"n_kv_heads": 2, "positions": "rope"}}, quick=True),
        SpecCase("rope_interleaved_partial_post_bi", {  # GPT-J pairs, half the dims
            "model": dict(base, d_ff=48), "norm": {"position": "post"},
            "attention": {"mask": "bidirectional", "positions": "rope",
                          "rope_style": "interleaved", "rope_fraction": 0.5,
                          "rope_theta": 500.0}}),
        SpecCase("qknorm_rope_qwen3_lm", {  # Qwen3: QK-norm, RoPE 1e6, GQA, tied
            "model": dict(base, n_heads=8, bias=False), "norm": {"type": "rmsnorm"},
            "ffn": {"activation": "swiglu", "multiple_of": 16},
            "attention": {"n_kv_heads": 2, "head_dim": 8, "qk_norm": "rmsnorm",
                          "positions": "rope", "rope_theta": 1000000.0},
            "embedding": {"vocab": 45, "positions": "none"},
            "head": {"tied": True, "loss": "cross_entropy"}}, quick=True),
        SpecCase("qknorm_ln_cross_deepnorm_rope", {  # QK-norm on both attentions
            "model": dict(base, d_ff=40), "norm": {"position": "deepnorm"},
            "ffn": {"activation": "relu"},
            "attention": {"cross": True, "qk_norm": "layernorm", "positions": "rope",
                          "rope_style": "interleaved"}}, quick=True),
        SpecCase("qknorm_rms_mqa_bi", {  # QK-norm without RoPE
            "model": dict(base, d_ff=48), "norm": {"type": "rmsnorm", "position": "post"},
            "attention": {"mask": "bidirectional", "n_kv_heads": 1,
                          "qk_norm": "rmsnorm"}}),
        SpecCase("rope_headdim6_fraction", {  # int(0.34 * 6) = 2 rotating dims
            "model": dict(base, n_heads=3, d_ff=40), "ffn": {"activation": "gelu_tanh"},
            "attention": {"head_dim": 6, "positions": "rope", "rope_fraction": 0.34},
            "embedding": {"vocab": 33, "positions": "learned"},
            "head": {"loss": "cross_entropy"}}),
        SpecCase("rope_qknorm_bf16", {
            "model": dict(base, dtype="bf16"), "norm": {"type": "rmsnorm"},
            "attention": {"n_kv_heads": 2, "qk_norm": "rmsnorm", "positions": "rope"}}),
    ]


def window_specs():
    """[attention] sliding_window with both masks, GQA, RoPE, cross-attention
    (which it leaves alone) and the LM head. max_seq 128: the long cases
    (shapes_for, grad_shapes_for) skip whole key and query tiles."""
    base = {"d_model": 32, "n_heads": 4, "depth": 2, "max_seq": 128, "max_batch": 4}
    return [
        SpecCase("window_mistral", {  # Mistral: GQA, RoPE, a causal window
            "model": dict(base, bias=False), "norm": {"type": "rmsnorm"},
            "ffn": {"activation": "swiglu", "multiple_of": 16},
            "attention": {"n_kv_heads": 2, "positions": "rope",
                          "sliding_window": 5}}, quick=True),
        SpecCase("window_bidirectional_post", {  # |i - j| < 4
            "model": dict(base, d_ff=48), "norm": {"position": "post"},
            "attention": {"mask": "bidirectional", "sliding_window": 4}}, quick=True),
        SpecCase("window_one_cross_deepnorm", {  # each query sees itself only
            "model": dict(base, d_ff=40), "norm": {"position": "deepnorm"},
            "ffn": {"activation": "relu"},
            "attention": {"cross": True, "sliding_window": 1}}),
        SpecCase("window_wide_qknorm_lm", {  # a window wider than the tiles
            "model": dict(base, n_heads=2, bias=False), "norm": {"type": "rmsnorm"},
            "attention": {"mask": "bidirectional", "qk_norm": "rmsnorm",
                          "sliding_window": 40},
            "embedding": {"vocab": 37, "positions": "learned"},
            "head": {"tied": True, "loss": "cross_entropy"}}),
    ]


def alibi_specs():
    """[attention] positions = "alibi": head counts a power of two and not
    (the slopes' two rules), both masks, GQA, a window, cross-attention
    (self-attention only) and the LM head."""
    base = {"d_model": 32, "n_heads": 4, "depth": 2, "max_seq": 128, "max_batch": 4}
    return [
        SpecCase("alibi_bloom_lm", {  # BLOOM: ALiBi, no position embedding
            "model": base, "ffn": {"activation": "gelu"},
            "attention": {"positions": "alibi"},
            "embedding": {"vocab": 41, "positions": "none"},
            "head": {"tied": True, "loss": "cross_entropy"}}, quick=True),
        SpecCase("alibi_6heads_gqa", {  # 6 heads: 4 slopes, then 2 of 8's
            "model": dict(base, n_heads=6, bias=False), "norm": {"type": "rmsnorm"},
            "ffn": {"activation": "swiglu", "multiple_of": 16},
            "attention": {"n_kv_heads": 2, "head_dim": 8, "positions": "alibi"}},
            quick=True),
        SpecCase("alibi_12heads_bi_window_post", {  # |i - j| either way
            "model": dict(base, d_model=48, n_heads=12, d_ff=64),
            "norm": {"position": "post"},
            "attention": {"mask": "bidirectional", "positions": "alibi",
                          "sliding_window": 6}}),
        SpecCase("alibi_cross_deepnorm", {  # cross-attention has no bias
            "model": dict(base, d_ff=40), "norm": {"position": "deepnorm"},
            "ffn": {"activation": "relu"},
            "attention": {"cross": True, "positions": "alibi"}}),
    ]


def padding_specs():
    """[attention] key_padding (right-padded batches: lengths [batch]) with
    the BERT and LLaMA recipes, a window with ALiBi (padded queries whose
    window holds no valid key), cross-attention (enc is not masked), QK-norm
    with a head_dim other than d_model / n_heads, and logits without a loss.
    max_seq 128: the long cases (shapes_for, grad_shapes_for) pad whole key
    tiles. Besides the oracle's values: padded output rows and d_x rows are
    exactly 0 (check_padded_rows), valid rows do not depend on what the
    padded positions hold (padding-invariance) and targets at padded
    positions are ignored (grad-padded-targets-only)."""
    base = {"d_model": 32, "n_heads": 4, "depth": 2, "max_seq": 128, "max_batch": 4}
    return [
        SpecCase("pad_bert", {  # BERT: bidirectional, post-LN, learned positions
            "model": dict(base), "norm": {"position": "post"},
            "ffn": {"activation": "gelu"},
            "attention": {"mask": "bidirectional", "key_padding": True},
            "embedding": {"vocab": 43, "positions": "learned"},
            "head": {"tied": True, "loss": "cross_entropy"}}, quick=True),
        SpecCase("pad_llama_lm", {  # LLaMA: RMSNorm, SwiGLU, GQA, RoPE, causal
            "model": dict(base, bias=False), "norm": {"type": "rmsnorm"},
            "ffn": {"activation": "swiglu", "multiple_of": 16},
            "attention": {"n_kv_heads": 2, "positions": "rope", "key_padding": True},
            "embedding": {"vocab": 39, "positions": "none"},
            "head": {"loss": "cross_entropy"}}),
        SpecCase("pad_window_alibi_bi", {  # |i - j| < 6, ALiBi, x in, d_x out
            "model": dict(base, d_ff=48), "ffn": {"activation": "gelu_tanh"},
            "attention": {"mask": "bidirectional", "sliding_window": 6,
                          "positions": "alibi", "key_padding": True}}, quick=True),
        SpecCase("pad_cross_rms", {  # the lengths mask self-attention only
            "model": dict(base, d_ff=48), "norm": {"type": "rmsnorm"},
            "ffn": {"activation": "geglu", "multiple_of": 16},
            "attention": {"cross": True, "key_padding": True}}),
        SpecCase("pad_qknorm_headdim_bi_deepnorm", {  # 4 heads of 12, d_model 32
            "model": dict(base, d_ff=40, bias=False), "norm": {"position": "deepnorm"},
            "ffn": {"activation": "silu"},
            "attention": {"mask": "bidirectional", "qk_norm": "layernorm", "head_dim": 12,
                          "key_padding": True}}),
        SpecCase("pad_lm_sin_logits", {  # logits without a loss: d_logits of
            "model": dict(base, d_ff=48),  # padded rows must not count
            "attention": {"key_padding": True},
            "embedding": {"vocab": 29, "positions": "sinusoidal"},
            "head": {"tied": False}}),
    ]


def ablation_specs():
    """norm.type = "none", position = "sandwich" and residual.enabled =
    false across the other features: cross-attention, an LM head with its
    loss, GQA + RoPE, QK-norm (its own type, still there without the
    model's norms), key padding, a window with ALiBi, bf16 and DeepNorm."""
    base = {"d_model": 32, "n_heads": 4, "depth": 2, "max_seq": 64, "max_batch": 4}
    lm = {"embedding": {"vocab": 41, "positions": "none"},
          "head": {"loss": "cross_entropy"}}
    return [
        SpecCase("abl_nores_pre_lm_rope", {  # seed 000's ablation, as an LM
            "model": dict(base, d_ff=48), "norm": {"type": "rmsnorm"},
            "residual": {"enabled": False}, "ffn": {"activation": "swiglu",
                                                    "multiple_of": 16},
            "attention": {"n_kv_heads": 2, "positions": "rope"}, **lm}, quick=True),
        SpecCase("abl_nores_post_cross", {
            "model": dict(base, d_ff=40), "norm": {"position": "post"},
            "residual": {"enabled": False},
            "attention": {"cross": True, "mask": "bidirectional"}}),
        SpecCase("abl_nores_sandwich_pad", {
            "model": dict(base, d_ff=48, max_seq=128), "norm": {"position": "sandwich"},
            "residual": {"enabled": False}, "ffn": {"activation": "gelu_tanh"},
            "attention": {"mask": "bidirectional", "key_padding": True}}),
        SpecCase("abl_nonorm_nores_lm", {  # neither norms nor residuals
            "model": dict(base, d_ff=40, depth=3), "norm": {"type": "none"},
            "residual": {"enabled": False}, "ffn": {"activation": "relu"},
            "embedding": {"vocab": 23, "positions": "learned"},
            "head": {"tied": True, "loss": "cross_entropy"}}),
        SpecCase("abl_nonorm_cross_deepnorm", {  # alpha-scaled, unnormalised
            "model": dict(base, d_ff=40), "norm": {"type": "none", "position": "deepnorm"},
            "ffn": {"activation": "geglu", "multiple_of": 8},
            "attention": {"cross": True}}, quick=True),
        SpecCase("abl_nonorm_qknorm_rope_lm", {  # only QK-norm normalises
            "model": dict(base, d_ff=48, bias=False),
            "norm": {"type": "none", "eps": 1e-6},
            "attention": {"qk_norm": "rmsnorm", "positions": "rope"}, **lm}),
        SpecCase("abl_sandwich_cross_qknorm", {  # Gemma 2's norms, with cross
            "model": dict(base, d_ff=48), "norm": {"type": "rmsnorm", "position": "sandwich"},
            "ffn": {"activation": "geglu", "multiple_of": 16},
            "attention": {"cross": True, "qk_norm": "layernorm", "n_kv_heads": 2}},
            quick=True),
        SpecCase("abl_sandwich_pad_window_lm", {
            "model": dict(base, d_ff=48, max_seq=128),
            "norm": {"position": "sandwich", "final": False},
            "attention": {"sliding_window": 5, "positions": "alibi", "key_padding": True},
            "embedding": {"vocab": 37, "positions": "learned"},
            "head": {"tied": True, "loss": "cross_entropy"}}),
        SpecCase("bf16_abl_sandwich_nores", {
            "model": dict(base, d_ff=48, dtype="bf16"),
            "norm": {"type": "rmsnorm", "position": "sandwich"},
            "residual": {"enabled": False}, "ffn": {"activation": "silu"}}),
    ]


def moe_specs():
    """[ffn] experts (mixture of experts, E = 4 of width d_ff 32), tiny (d_model
    16-32, depth 2, max_seq 8), four specs that cross top_k 1 and 2,
    renormalize on and off, shared experts 0 and 1, gated and plain
    activations, pre- and post-LN, RMSNorm and LayerNorm, biases on and off,
    causal LMs with the cross-entropy and load-balancing losses and blocks
    without a loss, key padding, cross-attention, the expert_counts probe
    and bf16. Random inputs are redrawn near routing ties
    (Runner.write_inputs). None is --quick: --compare-unfused=quick would
    compile one more object each (the long tier compares them)."""
    base = {"d_model": 16, "n_heads": 2, "d_ff": 32, "depth": 2, "max_seq": 8,
            "max_batch": 4}
    return [
        SpecCase("moe_mixtral_lm_pad", {  # Mixtral: RMSNorm, SwiGLU, top-2, RoPE
            "model": dict(base, d_model=32, bias=False), "norm": {"type": "rmsnorm"},
            "ffn": {"activation": "swiglu", "experts": 4, "top_k": 2},  # aux 0.01
            "attention": {"positions": "rope", "key_padding": True},
            "embedding": {"vocab": 29, "positions": "none"},
            "head": {"loss": "cross_entropy"}}),
        SpecCase("moe_switch_post_gelu_bi_pad_counts", {  # Switch: top-1, raw gate
            "model": dict(base), "norm": {"position": "post"},
            "ffn": {"activation": "gelu", "experts": 4, "top_k": 1,
                    "renormalize": False},
            "attention": {"mask": "bidirectional", "key_padding": True},
            "probes": {"expert_counts": True}}),
        SpecCase("moe_deepseek_shared_lm_pad", {  # a shared expert, raw gates
            "model": dict(base), "ffn": {"activation": "gelu", "experts": 4, "top_k": 2,
                                         "renormalize": False, "shared_experts": 1,
                                         "aux_loss": 0.05},
            "attention": {"key_padding": True},
            "embedding": {"vocab": 23, "positions": "learned"},
            "head": {"tied": True, "loss": "cross_entropy"}}),
        SpecCase("moe_bf16_cross_rms_post_swiglu_top1", {  # renormalised top-1: gate 1
            "model": dict(base, d_model=24, dtype="bf16"),
            "norm": {"type": "rmsnorm", "position": "post"},
            "ffn": {"activation": "swiglu", "experts": 4, "top_k": 1, "shared_experts": 1},
            "attention": {"cross": True}}),
    ]


def hc_specs():
    """[residual] streams > 1 (docs/hyper_connections.md): mHC and HC, tiny
    (d_model 16-24, depth 2, max_seq 8), crossing the four norm positions,
    RMSNorm, LayerNorm and none, 2 to 4 streams, a few Sinkhorn iteration
    counts, causal LMs with key padding, cross-attention, a mixture of
    experts and bf16. Three of them are long_only: CI keeps mHC pre and
    post, HC with cross-attention and MoE, and bf16."""
    base = {"d_model": 16, "n_heads": 2, "d_ff": 32, "depth": 2, "max_seq": 8,
            "max_batch": 4}
    return [
        SpecCase("hc_mhc4_pre_rms_lm_pad", {  # mHC's setting: n = 4, pre-norm
            "model": dict(base, bias=False), "norm": {"type": "rmsnorm"},
            "residual": {"streams": 4},  # mhc, 20 iterations
            "ffn": {"activation": "swiglu"},
            "attention": {"positions": "rope", "key_padding": True},
            "embedding": {"vocab": 29, "positions": "none"},
            "head": {"loss": "cross_entropy"}}),
        SpecCase("hc_dyn2_pre_ln_lm", {  # HC, n = 2
            "model": dict(base), "residual": {"streams": 2, "mixing": "hc"},
            "embedding": {"vocab": 23, "positions": "learned"},
            "head": {"tied": True, "loss": "cross_entropy"}}, long_only=True),
        SpecCase("hc_mhc3_post_ln_bi_it5", {  # post: N on each stream
            "model": dict(base), "norm": {"position": "post"},
            "residual": {"streams": 3, "sinkhorn_iters": 5},
            "attention": {"mask": "bidirectional"}}),
        SpecCase("hc_dyn3_sandwich_cross_moe", {
            "model": dict(base, d_model=24), "norm": {"position": "sandwich"},
            "residual": {"streams": 3, "mixing": "hc"},
            "ffn": {"activation": "gelu", "experts": 4, "top_k": 2},
            "attention": {"cross": True}}),
        SpecCase("hc_mhc2_deepnorm_rms_it1", {
            "model": dict(base), "norm": {"type": "rmsnorm", "position": "deepnorm"},
            "residual": {"streams": 2, "sinkhorn_iters": 1}}, long_only=True),
        SpecCase("hc_dyn4_nonorm_pre", {  # norm none: the maps' own RMS stays
            "model": dict(base), "norm": {"type": "none"},
            "residual": {"streams": 4, "mixing": "hc"}}, long_only=True),
        SpecCase("hc_mhc2_bf16_pre_lm", {
            "model": dict(base, dtype="bf16"), "residual": {"streams": 2},
            "embedding": {"vocab": 19}, "head": {"loss": "cross_entropy"}}),
    ]


def check_hc_init(cfg, layout, params):
    """NAME_init wrote every hyper-connection tensor as the paper init of
    docs/hyper_connections.md (oracle.hc_init_values): exactly, in f32."""
    where = {name: (offset, shape) for name, offset, shape in layout}
    for i in range(cfg.depth):
        for sub in hc_sublayers(cfg):
            for rel, want in hc_init_values(cfg, i, sub).items():
                name = f"blocks.{i}.{sub}_hc.{rel}"
                offset, shape = where[name]
                got = params[offset:offset + want.size].reshape(shape)
                if not np.array_equal(got, want.astype(np.float32)):
                    raise CaseFailed(f"init of {name} is {got.tolist()}, want "
                                     f"{want.tolist()}")


def pairwise_block_names():
    """28 of block_specs' 168 that hold every pair of (norm, position,
    activation, mask) values, the --quick blocks aside: for activation c
    and position b, norm (b + c) % 3 and mask ((b + 1) // 2 + c) % 2. A bug
    that needs two features to show shows in one of them; the full product
    runs in the long tier (conformance-long.test)."""
    rows = [(NORMS[(b + c) % 3], pos, act, MASKS[((b + 1) // 2 + c) % 2])
            for c, act in enumerate(ACTIVATIONS) for b, pos in enumerate(POSITIONS)]
    factors = (NORMS, POSITIONS, ACTIVATIONS, MASKS)
    for i in range(4):
        for j in range(i + 1, 4):
            pairs = {(r[i], r[j]) for r in rows}
            assert len(pairs) == len(factors[i]) * len(factors[j]), (i, j)
    return {block_name(*row) for row in rows}


def all_specs(pairwise=False):
    """Every spec; `pairwise`: of the block matrix only the pairwise
    covering blocks and the --quick ones, and no long_only spec."""
    blocks = block_specs()
    specs = (cross_specs() + lm_specs() + odd_specs() + bf16_specs() +
             head_specs() + position_specs() + window_specs() + alibi_specs() +
             padding_specs() + ablation_specs() + moe_specs() + hc_specs())
    if pairwise:
        keep = pairwise_block_names()
        blocks = [s for s in blocks if s.name in keep or s.quick]
        specs = [s for s in specs if not s.long_only]
    return blocks + specs


def _clamp(spec, cases):
    out = []
    for b, s, t, th in cases:
        c = (min(b, spec.max_batch), min(s, spec.cfg.max_seq), min(t, spec.cfg.max_seq), th)
        if c not in out:
            out.append(c)
    return out


# --generic runs one case of each kind, (2, 17, enc 9) on 2 threads: its
# harness binds the same entry points by the descriptor's names, and the
# shapes are the direct harness's to cover (conformance.test).
GENERIC_CASE = (2, 17, 9, 2)


def grad_shapes_for(spec, quick, generic=False):
    """(batch, seq, enc_seq, threads) of the gradient cases: (1, 1), seqs
    that are no multiple of 4, 8 or 16, enc_seq != seq. The accumulation
    check runs on the second case, or on the only one (--generic without a
    window or padding case)."""
    full = [(1, 1, 1, 0), GENERIC_CASE, (3, 5, 23, 0)]
    cases = [GENERIC_CASE] if generic else full[:2] if quick else full
    if spec.cfg.sliding_window:  # long enough to skip whole tiles
        cases = cases + [(1, 101, 9, 2)]
    if spec.cfg.key_padding:  # rows padded by whole key tiles (lengths_for)
        cases = cases + [(3, 99, 9, 2)]
    return _clamp(spec, cases)


def shapes_for(spec, quick, generic=False):
    """(batch, seq, enc_seq, threads) cases, clamped to the spec's limits.
    17 and 37 are no multiple of 4, 8 or 16."""
    full = [(1, 1, 1, 0), GENERIC_CASE, (3, 64, 64, 0), (1, 37, 50, 1), (4, 5, 23, 3)]
    cases = [GENERIC_CASE] if generic else full[:3] if quick else full
    if spec.cfg.sliding_window:  # long enough to skip whole tiles
        cases = cases + [(2, 128, 33, 2)]
    if spec.cfg.key_padding:  # rows padded by whole key tiles (lengths_for)
        cases = cases + [(4, 100, 33, 2)]
    return _clamp(spec, cases)


def lengths_for(rng, b, s):
    """Random lengths [b] in [1, s] for a key_padding spec: with b > 1 one
    row is full (s) and one, when s > 1, shorter (at most s / 3: with s ~ 100
    it is padded by whole 32- and 64-key tiles); with b > 2 one row has
    length 1, with b > 3 one ends at or just past a tile boundary (32, 33,
    64, 65). Rows shuffled; seq < 1 (a bad shape) gives ones."""
    if s < 1:
        return np.ones(b, dtype=np.int32)
    lengths = rng.integers(1, s + 1, b)
    if b > 1:
        lengths[0] = s
        if s > 1:
            lengths[1] = rng.integers(1, max(2, s // 3) + 1) if s > 2 else 1
        if b > 2:
            lengths[2] = 1
        if b > 3:
            lengths[3] = min(s, int(rng.choice([32, 33, 64, 65])))
        lengths = lengths[rng.permutation(b)]
    return lengths.astype(np.int32)


# ---------------------------------------------------------------------------
# Running one spec.
# ---------------------------------------------------------------------------

class Results:
    """The case lines of one spec."""

    def __init__(self, name):
        self.name, self.lines, self.passed, self.failed = name, [], 0, 0
        self.worst = {}  # kind -> (error, where): the largest error of a kind

    def note(self, kind, err, where):
        if kind not in self.worst or err > self.worst[kind][0]:
            self.worst[kind] = (err, f"{self.name} {where}")

    def info(self, case, detail=""):
        """A line that is neither a pass nor a failure."""
        self.lines.append(f"NOTE {self.name} {case}" + (f" {detail}" if detail else ""))

    def add(self, ok, case, detail=""):
        self.lines.append(f"{'PASS' if ok else 'FAIL'} {self.name} {case}"
                          + (f" {detail}" if detail else ""))
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok


class CaseFailed(Exception):
    pass


def run(cmd, timeout, cwd=None):
    try:
        p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout} s: {' '.join(cmd)}"
    except OSError as e:
        return 127, f"{e}: {' '.join(cmd)}"
    return p.returncode, (p.stdout + p.stderr).strip()


def tail(text, n=6):
    lines = text.splitlines()[-n:]
    return "".join("\n    | " + line for line in lines)


def compare(out, ref, rtol):
    """max|out - ref| <= rtol * max(1, max|ref|). Returns (ok, message,
    max|out - ref| / max(1, max|ref|))."""
    ref = np.asarray(ref, dtype=np.float64)
    out = np.asarray(out, dtype=np.float64)
    if out.shape != ref.shape:
        return False, f"shape {out.shape} != {ref.shape}", math.inf
    if not np.all(np.isfinite(out)):
        bad = np.argwhere(~np.isfinite(out))[0]
        return False, f"non-finite output at {tuple(bad)}", math.inf
    err = np.abs(out - ref)
    scale = max(1.0, float(np.abs(ref).max()) if ref.size else 1.0)
    tol = rtol * scale
    worst = float(err.max()) if err.size else 0.0
    msg = f"max_err={worst:.3g} tol={tol:.3g}"
    if worst > tol:
        idx = tuple(int(i) for i in np.unravel_index(int(err.argmax()), err.shape))
        msg += f" worst at {idx}: got {out[idx]:.7g} want {ref[idx]:.7g}"
        return False, msg, worst / scale
    return True, msg, worst / scale


def oracle_args(inputs):
    """The oracle's forward arguments from write_inputs' dict."""
    return (inputs.get("tokens", inputs.get("x")), inputs.get("enc"),
            inputs.get("targets"), inputs.get("lengths"))


def counted_targets(cfg, targets, lengths):
    """bool [b, s]: the targets the loss averages (in [0, vocab), and with
    key_padding at positions i < lengths[b])."""
    ok = (targets >= 0) & (targets < cfg.vocab)
    if lengths is not None:
        ok &= np.arange(targets.shape[1])[None, :] < np.asarray(lengths)[:, None]
    return ok


def check_padded_rows(values, lengths, b, s, name):
    """The ABI's promise for key_padding: rows i >= lengths[b] of an output
    (or of d_x) are exactly 0.0. Returns (ok, message)."""
    a = np.asarray(values).reshape(b, s, -1)
    pad = np.arange(s)[None, :] >= np.asarray(lengths)[:, None]
    n = int(pad.sum())
    bad = pad[..., None] & ~(a == 0)
    if bad.any():
        r, i, c = (int(v) for v in np.argwhere(bad)[0])
        return False, (f"{name}: {int(bad.any(-1).sum())} of {n} padded rows not 0, e.g. "
                       f"[{r}, {i}, {c}] = {a[r, i, c]:.7g} (lengths[{r}] = {lengths[r]})")
    return True, f"{name}: {n} padded rows 0"


def rounding_ratio(out, ref, ref_f32):
    """RMS(out - ref) / RMS(out - ref_f32) for a bf16 spec: ref is the
    oracle's bf16-rounded model, ref_f32 its f32 one. Near 0 when the
    rounding is the oracle's (a rare operand rounding the other way, after
    f32 round-off, adds a few isolated errors); near 1 or above when the
    operands are not rounded, or rounded differently."""
    out = np.asarray(out, dtype=np.float64).reshape(-1)
    rms = lambda d: math.sqrt(float(np.mean(d * d))) if d.size else 0.0
    far = rms(out - np.asarray(ref_f32, dtype=np.float64).reshape(-1))
    return rms(out - np.asarray(ref, dtype=np.float64).reshape(-1)) / max(far, TINY)


def grad_errors(ours, ref, parts):
    """Per-tensor relative errors of a gradient buffer (see GRAD_FLOOR).

    parts: [(name, offset, numel)]. Returns [(rel, name, detail, vanishing)],
    worst first; rel is inf where ours is not finite; vanishing: the tensor's
    max|ref| is below the floor (judged against the floor)."""
    ours = np.asarray(ours, dtype=np.float64).reshape(-1)
    ref = np.asarray(ref, dtype=np.float64).reshape(-1)
    floor = max(GRAD_FLOOR * (float(np.abs(ref).max()) if ref.size else 0.0), TINY)
    errs = []
    for name, offset, n in parts:
        o, r = ours[offset:offset + n], ref[offset:offset + n]
        if n == 0:
            continue
        if not np.all(np.isfinite(o)):
            k = int(np.argwhere(~np.isfinite(o))[0][0])
            errs.append((math.inf, name, f"non-finite at [{k}]", False))
            continue
        err = np.abs(o - r)
        k = int(err.argmax())
        top = float(np.abs(r).max())
        scale = max(top, floor)
        errs.append((float(err[k]) / scale, name,
                     f"[{k}] got {o[k]:.7g} want {r[k]:.7g} scale {scale:.3g}", top < floor))
    errs.sort(key=lambda e: -e[0])
    return errs


def read_header_txt(path):
    info, tensors = {}, []
    with open(path) as f:
        for line in f:
            parts = line.split()
            if not parts:
                continue
            if parts[0] == "tensor":
                # name offset numel rank, TFC_MAX_PARAM_RANK dims (0 past
                # the rank), init kind, init parameter
                name, offset, numel, rank = parts[1:5]
                shape = tuple(int(s) for s in parts[5:5 + int(rank)])
                tensors.append((name, int(offset), int(numel), shape))
            else:
                info[parts[0]] = parts[1]
    return info, tensors


def check_header(spec, info, tensors, has_backward):
    """The header's macros and tensor table against the oracle."""
    cfg = spec.cfg
    want = {"D_MODEL": cfg.d_model, "N_HEADS": cfg.n_heads, "N_KV_HEADS": cfg.n_kv_heads,
            "HEAD_DIM": cfg.head_dim, "D_FF": cfg.d_ff,
            "DEPTH": cfg.depth, "MAX_SEQ": cfg.max_seq, "MAX_BATCH": spec.max_batch,
            "VOCAB": cfg.vocab, "HAS_EMBEDDING": int(cfg.has_embedding),
            "HAS_HEAD": int(cfg.has_head), "HAS_LOSS": int(cfg.has_loss),
            "HAS_CROSS": int(cfg.cross), "HAS_KEY_PADDING": int(cfg.key_padding),
            "HAS_BACKWARD": int(has_backward)}
    layout, count = compute_layout(cfg)
    want.update(param_count=count, NUM_TENSORS=len(layout))
    for key, value in want.items():
        if int(info.get(key, -1)) != value:
            raise CaseFailed(f"header {key} = {info.get(key)}, oracle expects {value}")
    for k, ((name, offset, shape), t) in enumerate(zip(layout, tensors)):
        if t != (name, offset, math.prod(shape), shape):
            raise CaseFailed(f"header tensor #{k} is {t}, oracle expects "
                             f"{(name, offset, math.prod(shape), shape)}")


class Runner:
    def __init__(self, args, work):
        self.args, self.work = args, work

    def harness(self, spec, d, b, s, t, threads, seed=None, flags=()):
        cmd = [os.path.join(self.sdir(spec), "harness"), *flags, d, str(b), str(s),
               str(t if spec.cfg.cross else 0), str(threads)]
        if seed is not None:
            cmd.append(str(seed))
        return run(cmd, self.args.timeout)

    def sdir(self, spec):
        return os.path.join(self.work, spec.name)

    def min_gap(self, spec):
        return self.args.moe_min_gap_bf16 if spec.bf16 else self.args.moe_min_gap

    def write_inputs(self, spec, d, rng, b, s, t, grad=False, model=None, res=None):
        """Random inputs; with grad, also d_y / d_logits (no loss), and a
        valid target even at batch * seq = 1.

        MoE with `model` (the oracle, its parameters loaded): drawn again
        (at most MOE_REDRAWS times, a NOTE in res each time) while the
        oracle's routing of these inputs is within min_gap of a tie."""
        if model is None or not spec.cfg.moe:
            return self._write_inputs(spec, d, rng, b, s, t, grad)
        bound = self.min_gap(spec)
        for attempt in range(MOE_REDRAWS + 1):
            inputs = self._write_inputs(spec, d, rng, b, s, t, grad)
            gap = model.route_gap(*oracle_args(inputs))
            if gap >= bound:
                return inputs
            if res is not None:
                res.info(f"route-gap {os.path.basename(d)}",
                         f"a token's k-th and (k+1)-th router probabilities differ by "
                         f"{gap:.2g} (relative) < {bound:g}: inputs drawn again")
        raise CaseFailed(f"{os.path.basename(d)}: {MOE_REDRAWS + 1} draws all had a "
                         f"routing near-tie (gap < {bound:g})")

    def _write_inputs(self, spec, d, rng, b, s, t, grad=False):
        cfg = spec.cfg
        os.makedirs(d, exist_ok=True)
        inputs = {}
        if cfg.has_embedding:
            inputs["tokens"] = rng.integers(0, cfg.vocab, (b, s)).astype(np.int32)
        else:
            inputs["x"] = rng.standard_normal((b, s, cfg.d_model)).astype(np.float32)
        if cfg.key_padding:
            inputs["lengths"] = lengths_for(rng, b, s)
        if cfg.cross:
            inputs["enc"] = rng.standard_normal((b, t, cfg.d_model)).astype(np.float32)
        if cfg.has_loss:
            tgt = rng.integers(0, cfg.vocab, (b, s)).astype(np.int32)
            tgt[rng.random((b, s)) < 0.2] = -1  # ignored targets
            if b * s == 1 and not grad:
                tgt[:] = -1  # no valid target at all: the loss must be 0
            if grad and not counted_targets(cfg, tgt, inputs.get("lengths")).any():
                tgt.flat[0] = 0
            inputs["targets"] = tgt
        if grad and not cfg.has_loss:
            n = cfg.vocab if cfg.has_head else cfg.d_model
            inputs["d_" + cfg.output_names()[0]] = rng.standard_normal(
                (b, s, n)).astype(np.float32)
        for name, a in inputs.items():
            a.tofile(os.path.join(d, name + ".bin"))
        return inputs

    def reference(self, model, inputs):
        with torch.no_grad():
            outs = model(inputs.get("tokens", inputs.get("x")), inputs.get("enc"),
                         inputs.get("targets"), inputs.get("lengths"))
        return [o.numpy() for o in outs]

    def check_outputs(self, spec, d, model, inputs, b, s, res=None, case=""):
        cfg = spec.cfg
        refs = self.reference(model, inputs)
        refs_f32 = self.f32_model(model, lambda: self.reference(model, inputs)) \
            if spec.bf16 else [None] * len(refs)
        msgs, ok = [], True
        for name, ref, ref_f32 in zip(cfg.output_names(), refs, refs_f32):
            path = os.path.join(d, name + ".bin")
            out = np.fromfile(path, dtype=np.float32)
            if out.size != ref.size:
                return False, f"{name}.bin has {out.size} floats, expected {ref.size}"
            rtol = self.args.bf16_rtol if spec.bf16 else self.args.rtol
            good, msg, rel = compare(out.reshape(ref.shape), ref, rtol)
            if res is not None:
                res.note("bf16 forward" if spec.bf16 else "forward", rel, f"{case} {name}")
            if spec.bf16 and ref.size > 1:
                good &= self.check_rounding(out, ref, ref_f32, res, f"{case} {name}")
                msg += f" rms_ratio={rounding_ratio(out, ref, ref_f32):.3g}"
            ok &= good
            msgs.append(f"{name}: {msg}")
            if cfg.key_padding and name != "loss":
                good, msg = check_padded_rows(out, inputs["lengths"], b, s, name)
                ok &= good
                msgs.append(msg)
        return ok, "; ".join(msgs)

    @staticmethod
    def f32_model(model, fn):
        """fn() with the bf16 spec's oracle switched to its f32 model."""
        model.set_bf16(False)
        try:
            return fn()
        finally:
            model.set_bf16(True)

    def check_rounding(self, out, ref, ref_f32, res, where):
        ratio = rounding_ratio(out, ref, ref_f32)
        if res is not None:
            res.note("bf16 rms_ratio", ratio, where)
        return ratio <= self.args.bf16_rms_ratio

    def reference_grads(self, model, inputs):
        """float64 autograd: {"d_params": flat, "d_x": ..., "d_enc": ...}."""
        cfg = model.cfg
        model.zero_grad(set_to_none=True)
        if cfg.has_embedding:
            inp = inputs["tokens"]
        else:
            inp = torch.tensor(inputs["x"], dtype=torch.float64, requires_grad=True)
        enc = None
        if cfg.cross:
            enc = torch.tensor(inputs["enc"], dtype=torch.float64, requires_grad=True)
        outs = model(inp, enc, inputs.get("targets"), inputs.get("lengths"))
        if cfg.has_loss:
            loss = outs[1]
        else:
            d_out = inputs["d_" + cfg.output_names()[0]]
            loss = (outs[0] * torch.from_numpy(d_out).to(torch.float64)).sum()
        loss.backward()
        grads = {"d_params": model.flat_grad()}
        if not cfg.has_embedding:
            grads["d_x"] = inp.grad.numpy()
        if cfg.cross:
            grads["d_enc"] = enc.grad.numpy()
        model.zero_grad(set_to_none=True)
        return grads

    def read_grads(self, d, model, suffix=""):
        cfg = model.cfg
        out = {"d_params": np.fromfile(os.path.join(d, f"d_params{suffix}.bin"),
                                       dtype=np.float32)}
        if not cfg.has_embedding:
            out["d_x"] = np.fromfile(os.path.join(d, f"d_x{suffix}.bin"), dtype=np.float32)
        if cfg.cross:
            out["d_enc"] = np.fromfile(os.path.join(d, f"d_enc{suffix}.bin"),
                                       dtype=np.float32)
        return out

    @staticmethod
    def parts(model, kind, n):
        if kind == "d_params":
            return [(name, offset, math.prod(shape)) for name, offset, shape in model.layout]
        return [(kind, 0, n)]

    def check_grads(self, model, ours, refs, bound, res, case, note="", refs_f32=None):
        """Compares every gradient kind; notes the worst errors in res. With
        refs_f32 (a bf16 spec), also checks rounding_ratio per kind."""
        ok, msgs = True, []
        for kind, ref in refs.items():
            got = ours[kind]
            if got.size != ref.size:
                return False, f"{kind}: {got.size} floats, expected {ref.size}"
            rounding = ""
            if refs_f32 is not None:
                ok &= self.check_rounding(got, ref, refs_f32[kind], res, f"{case} {kind}")
                rounding = f" rms_ratio={rounding_ratio(got, ref, refs_f32[kind]):.3g}"
            errs = grad_errors(got, ref, self.parts(model, kind, ref.size))
            rel, tname, detail, vanishing = errs[0]
            for e in errs:  # the worst tensor judged on its own scale
                if not e[3]:
                    res.note(note + kind, e[0], f"{case} {e[1]}")
                    break
            for e in errs:  # the worst of those judged against the floor
                if e[3]:
                    res.note(note + kind + " (vanishing)", e[0], f"{case} {e[1]}")
                    break
            bad = [e for e in errs if not e[0] <= bound]
            ok &= not bad
            where = "" if kind != "d_params" else \
                f" ({tname}{', vanishing' if vanishing else ''})"
            msg = f"{kind}: rel={rel:.3g}{where}{rounding}"
            if bad:
                msg += (f" > {bound:g} in {len(bad)} tensor(s): " +
                        ", ".join(f"{n} rel={r:.3g} {dt}" for r, n, dt, _ in bad[:4]))
            msgs.append(msg)
        return ok, "; ".join(msgs)

    def build_harness(self, directory, name):
        a = self.args
        cc = a.cc.split() + [
            "-O2", "-std=c11", "-Werror=implicit-function-declaration", "-I" + a.include,
            "-I" + directory, f'-DTFC_HEADER="{name}.h"', f"-DTFC_NAME={name}",
            f"-DTFC_UNAME={name.upper()}", HARNESS, os.path.join(directory, name + ".o"),
            "-L" + a.runtime_lib, "-ltfc_runtime", "-lpthread", "-lm",
            "-o", os.path.join(directory, "harness")] + a.ldflags.split()
        if a.cuda:
            cc += ["-DTFC_HARNESS_CUDA", "-ldl"]
        if a.generic:
            cc += ["-DTFC_HARNESS_GENERIC"]
        return run(cc, a.timeout)

    def compare_builds(self, spec, model, fused_dir, unfused_dir, refs, res, case):
        """Outputs and gradients of the fused build against the unfused one;
        refs (the oracle's gradients) tell which gradients vanish."""
        msgs, ok, worst, skipped = [], True, (0.0, ""), 0
        fusion_rtol = self.args.bf16_fusion_rtol if spec.bf16 else self.args.fusion_rtol
        names = list(spec.cfg.output_names()) + ["d_params"]
        names += [k for k in ("d_x", "d_enc") if os.path.exists(
            os.path.join(unfused_dir, k + ".bin"))]
        for name in names:
            f = np.fromfile(os.path.join(fused_dir, name + ".bin"), dtype=np.float32)
            u = np.fromfile(os.path.join(unfused_dir, name + ".bin"), dtype=np.float32)
            if f.size != u.size:
                return False, f"{name}: {f.size} floats fused, {u.size} unfused"
            ref = refs.get(name)
            floor = GRAD_FLOOR * float(np.abs(ref).max()) if ref is not None else 0.0
            for part, offset, n in self.parts(model, name, u.size):
                if n == 0:
                    continue
                if ref is not None and float(np.abs(
                        ref.reshape(-1)[offset:offset + n]).max()) < floor:
                    skipped += 1
                    continue
                fu, uu = f[offset:offset + n].astype(np.float64), u[offset:offset + n]
                rel = float(np.abs(fu - uu).max() / max(float(np.abs(uu).max()), 1e-3))
                if not np.isfinite(rel) or rel > fusion_rtol:
                    ok = False
                    msgs.append(f"{part} rel={rel:.3g}")
                if rel > worst[0]:
                    worst = (rel, part)
        res.note("fused vs unfused", worst[0], f"{case} {worst[1]}")
        vanishing = f", {skipped} vanishing gradient(s) left to the oracle" if skipped else ""
        if ok:
            return True, f"worst rel={worst[0]:.3g} ({worst[1]}){vanishing}"
        return False, f"> {fusion_rtol:g}: " + ", ".join(msgs[:4])

    # -- the pipeline ------------------------------------------------------

    def run_spec(self, spec):
        res = Results(spec.name)
        try:
            self._run_spec(spec, res)
        except Exception:
            res.add(False, "internal", "exception in conformance.py:" +
                    tail(traceback.format_exc(), 12))
        return res

    def _run_spec(self, spec, res):
        a = self.args
        sd = self.sdir(spec)
        shutil.rmtree(sd, ignore_errors=True)
        os.makedirs(sd)
        toml_path = os.path.join(sd, "spec.toml")
        with open(toml_path, "w") as f:
            f.write(spec.toml)
        cfg = spec.cfg
        name = cfg.name

        # 1. Compile, and the layout JSON.
        rc, out = run([a.tfc, toml_path, "-o", os.path.join(sd, name + ".o")] + a.tfc_arg,
                      a.timeout)
        if rc != 0 or not os.path.exists(os.path.join(sd, name + ".h")):
            res.add(False, "compile", f"tfc exited {rc}" + tail(out))
            return
        json_path = os.path.join(sd, name + ".json")
        rc, out = run([a.tfc, toml_path, "--emit=layout", "-o", json_path], a.timeout)
        if rc != 0:
            res.add(False, "layout", f"tfc --emit=layout exited {rc}" + tail(out))
            layout_ok = False
        else:
            try:
                check_layout_json(cfg, json_path)
                layout_ok = res.add(True, "layout", f"{len(compute_layout(cfg)[0])} tensors")
            except (AssertionError, KeyError, ValueError, TypeError) as e:
                layout_ok = res.add(False, "layout", f"{type(e).__name__}: {e}")

        # 2. The harness.
        rc, out = self.build_harness(sd, name)
        if rc != 0:
            res.add(False, "harness-build", f"cc exited {rc}" + tail(out, 10))
            return
        unfused = None
        if a.compare_unfused == "all" or (a.compare_unfused == "quick" and spec.quick):
            unfused = os.path.join(sd, "unfused")
            os.makedirs(unfused)
            rc, out = run([a.tfc, toml_path, "-o", os.path.join(unfused, name + ".o"),
                           "--no-fusion"] + a.tfc_arg, a.timeout)
            if rc == 0:
                rc, out = self.build_harness(unfused, name)
            if rc != 0:
                res.add(False, "compile-unfused", f"exited {rc}" + tail(out))
                unfused = None

        model = Oracle(cfg, torch.float64)
        rng = np.random.default_rng([zlib.crc32(spec.name.encode()), a.seed])
        shapes = shapes_for(spec, a.quick, a.generic)

        # 3. Init: deterministic, finite, header agrees; forward on it.
        b, s, t, th = shapes[min(1, len(shapes) - 1)]
        dirs = [os.path.join(sd, n) for n in ("init_a", "init_b", "init_c")]
        seeds = [a.seed, a.seed, a.seed + 1]
        params = None
        try:
            for d, seed in zip(dirs, seeds):
                inputs = self.write_inputs(spec, d, np.random.default_rng(7), b, s, t)
                rc, out = self.harness(spec, d, b, s, t, th, seed)
                if rc != 0:
                    raise CaseFailed(f"harness exited {rc}" + tail(out))
            info, tensors = read_header_txt(os.path.join(dirs[0], "header.txt"))
            check_header(spec, info, tensors, "--forward-only" not in a.tfc_arg)
            pa, pb, pc = (np.fromfile(os.path.join(d, "params.bin"), dtype=np.float32)
                          for d in dirs)
            if pa.size != model.param_count:
                raise CaseFailed(f"params.bin has {pa.size} floats, want {model.param_count}")
            if not np.all(np.isfinite(pa)):
                raise CaseFailed("init wrote non-finite parameters")
            if not np.array_equal(pa, pb):
                raise CaseFailed("init is not deterministic for one seed")
            if np.array_equal(pa, pc):
                raise CaseFailed("init gives the same parameters for two seeds")
            params = pa
            if cfg.hyper:
                check_hc_init(cfg, model.layout, pa)
            model.load_flat(params)
            if cfg.moe and model.route_gap(*oracle_args(inputs)) < self.min_gap(spec):
                # Other inputs, the same (now written) parameters.
                res.info("route-gap init", f"routing gap {model.min_route_gap:.2g} < "
                         f"{self.min_gap(spec):g}: inputs drawn again")
                inputs = self.write_inputs(spec, dirs[0], np.random.default_rng(8), b, s, t,
                                           model=model, res=res)
                rc, out = self.harness(spec, dirs[0], b, s, t, th)
                if rc != 0:
                    raise CaseFailed(f"harness exited {rc}" + tail(out))
            ok, msg = self.check_outputs(spec, dirs[0], model, inputs, b, s, res, "init")
            res.add(ok, f"init+forward b={b} s={s}", msg)
        except CaseFailed as e:
            res.add(False, "init", str(e))
            if params is None:
                return

        # 4. Perturbed parameters, every shape.
        flat = params.astype(np.float64).copy()
        for tname, offset, shape in model.layout:
            n = math.prod(shape)
            chunk = flat[offset:offset + n]
            sd_noise = max(0.5 * float(chunk.std()), 0.1)
            flat[offset:offset + n] = chunk + rng.standard_normal(n) * sd_noise
        flat = flat.astype(np.float32)
        model.load_flat(flat, layout_json=json_path if layout_ok else None)
        for b, s, t, th in shapes:
            case = f"b={b} s={s}" + (f" enc={t}" if cfg.cross else "") + f" threads={th}"
            d = os.path.join(sd, f"b{b}_s{s}_t{t}_th{th}")
            try:
                inputs = self.write_inputs(spec, d, rng, b, s, t, model=model, res=res)
            except CaseFailed as e:
                res.add(False, case, str(e))
                continue
            flat.tofile(os.path.join(d, "params.bin"))
            rc, out = self.harness(spec, d, b, s, t, th)
            if rc != 0:
                res.add(False, case, f"harness exited {rc}" + tail(out))
                continue
            ok, msg = self.check_outputs(spec, d, model, inputs, b, s, res, case)
            res.add(ok, case, msg)

        # 5. Out-of-range shapes are rejected with a status, not a crash.
        bad = [(1, cfg.max_seq + 1, 1), (spec.max_batch + 1, 1, 1), (1, 0, 1)]
        if cfg.cross:
            bad.append((1, 1, cfg.max_seq + 1))
        msgs, ok = [], True
        for b, s, t in bad:
            d = os.path.join(sd, f"bad_b{b}_s{s}_t{t}")
            self.write_inputs(spec, d, rng, b, max(s, 0), t)
            flat.tofile(os.path.join(d, "params.bin"))
            rc, out = self.harness(spec, d, b, s, t, 0)
            if rc != 2 or f"status {BAD_SHAPE} " not in out:
                ok = False
                msgs.append(f"b={b} s={s} t={t}: exit {rc}, want exit 2 with status "
                            f"{BAD_SHAPE}" + tail(out, 3))
        res.add(ok, "rejects-bad-shapes", "; ".join(msgs) or f"{len(bad)} shapes")

        # 10. The expert_counts probe (the spec with it, through python/tfc).
        if spec.probe_toml:
            self.check_expert_counts(spec, model, flat, rng, res,
                                     "--forward-only" not in a.tfc_arg)

        # 6. Gradients against float64 autograd; 7. accumulation.
        if "--forward-only" in a.tfc_arg:
            return
        grad_shapes = grad_shapes_for(spec, a.quick, a.generic)
        for k, (b, s, t, th) in enumerate(grad_shapes):
            case = f"grad b={b} s={s}" + (f" enc={t}" if cfg.cross else "") + f" threads={th}"
            d = os.path.join(sd, f"grad_b{b}_s{s}_t{t}_th{th}")
            try:
                inputs = self.write_inputs(spec, d, rng, b, s, t, grad=True, model=model,
                                           res=res)
            except CaseFailed as e:
                res.add(False, case, str(e))
                continue
            flat.tofile(os.path.join(d, "params.bin"))
            if unfused:
                shutil.copytree(d, d + "_unfused")
            accumulate = k == 1 or len(grad_shapes) == 1
            rc, out = self.harness(spec, d, b, s, t, th, flags=["-a" if accumulate else "-b"])
            if rc != 0:
                res.add(False, case, f"harness exited {rc}" + tail(out))
                continue
            refs = self.reference_grads(model, inputs)
            ours = self.read_grads(d, model)
            refs_f32 = self.f32_model(model, lambda: self.reference_grads(model, inputs)) \
                if spec.bf16 else None
            ok, msg = self.check_grads(model, ours, refs,
                                       a.bf16_grad_rtol if spec.bf16 else a.grad_rtol,
                                       res, case, "bf16 " if spec.bf16 else "", refs_f32)
            if cfg.key_padding and "d_x" in ours:
                good, pmsg = check_padded_rows(ours["d_x"], inputs["lengths"], b, s, "d_x")
                ok &= good
                msg += "; " + pmsg
            res.add(ok, case, msg)
            if unfused:
                du = d + "_unfused"
                rc, out = run([os.path.join(unfused, "harness"), "-b", du, str(b), str(s),
                               str(t if cfg.cross else 0), str(th)], a.timeout)
                fcase = case.replace("grad", "fused-vs-unfused")
                if rc != 0:
                    res.add(False, fcase, f"unfused harness exited {rc}" + tail(out))
                else:
                    ok, msg = self.compare_builds(spec, model, d, du, refs, res, fcase)
                    res.add(ok, fcase, msg)
            if accumulate:
                # d_params doubles; d_x / d_enc are overwritten, not summed.
                acc = self.read_grads(d, model, "_acc")
                want = {kind: (2.0 * g.astype(np.float64) if kind == "d_params" else g)
                        for kind, g in ours.items()}
                ok, msg = self.check_grads(model, acc, want, 1e-5, res,
                                           case.replace("grad", "accumulate"), "accumulate ")
                if cfg.key_padding and "d_x" in acc:
                    good, pmsg = check_padded_rows(acc["d_x"], inputs["lengths"], b, s, "d_x")
                    ok &= good
                    msg += "; " + pmsg
                res.add(ok, case.replace("grad", "accumulate"), msg)
        if cfg.has_loss:
            # No valid target: the loss is the constant 0, its gradient 0
            # (but for a load-balancing loss, check_aux_only).
            b, s, t = min(2, spec.max_batch), min(3, cfg.max_seq), min(4, cfg.max_seq)
            d = os.path.join(sd, "grad_no_targets")
            inputs = self.write_inputs(spec, d, rng, b, s, t, grad=True, model=model, res=res)
            inputs["targets"][:] = -1
            inputs["targets"].tofile(os.path.join(d, "targets.bin"))
            flat.tofile(os.path.join(d, "params.bin"))
            rc, out = self.harness(spec, d, b, s, t, 0, flags=["-b"])
            if rc != 0:
                res.add(False, "grad-no-targets", f"harness exited {rc}" + tail(out))
            elif cfg.aux_loss > 0:
                self.check_aux_only(spec, model, d, inputs, res, "grad-no-targets", True)
            else:
                ours = self.read_grads(d, model)
                nonzero = {k: float(np.abs(v).max()) for k, v in ours.items()
                           if not np.all(v == 0)}
                res.add(not nonzero, "grad-no-targets",
                        "all gradients exactly 0" if not nonzero else
                        f"nonzero gradients (max |.|): {nonzero}")
        if cfg.key_padding:
            self.check_padding(spec, model, flat, rng, res)

    def check_aux_only(self, spec, model, d, inputs, res, case, backward):
        """A load-balancing loss without a counted target: the loss is the
        aux losses' sum (> 0); it and (backward) its gradients against the
        oracle's, with the bounds of steps 4 and 6."""
        bf16 = spec.bf16
        ref = float(self.reference(model, inputs)[1])
        loss = np.fromfile(os.path.join(d, "loss.bin"), dtype=np.float32)
        good, msg, _ = compare(loss.reshape(()), np.float64(ref),
                               self.args.bf16_rtol if bf16 else self.args.rtol)
        msg = f"the load-balancing loss alone: loss {float(loss[0]):.7g} vs {ref:.7g}: {msg}"
        if not ref > 0:
            good, msg = False, msg + " (the oracle's is not > 0)"
        if backward:
            ok, gmsg = self.check_grads(model, self.read_grads(d, model),
                                        self.reference_grads(model, inputs),
                                        self.args.bf16_grad_rtol if bf16 else
                                        self.args.grad_rtol, res, case,
                                        "bf16 " if bf16 else "")
            good &= ok
            msg += "; " + gmsg
        res.add(good, case, msg)

    def check_expert_counts(self, spec, model, flat, rng, res, backward):
        """[probes] expert_counts: the spec with the probe built by
        `tfc --emit=shared` and run through python/tfc (NAME_forward then
        has one more output, which the harness does not pass): forward's
        arrays end with int32 expert_counts [depth, experts], backward takes
        none; for a few shapes (padded rows with key_padding) the counts
        equal the oracle's exactly, the outputs are within the forward
        bound and the gradients within the gradient bound."""
        cfg = spec.cfg
        if self.args.cuda:
            res.info("expert_counts", "not checked: python/tfc runs CPU builds")
            return
        sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
        import tfc as pytfc
        pd = os.path.join(self.sdir(spec), "probe")
        os.makedirs(pd, exist_ok=True)
        path = os.path.join(pd, "spec.toml")
        with open(path, "w") as f:
            f.write(spec.probe_toml)
        probe_cfg = Config.from_string(spec.probe_toml)
        assert probe_cfg.probe_names() == ["expert_counts"], probe_cfg.probe_names()
        try:
            m = pytfc.compile(path, args=tuple(self.args.tfc_arg), cache_dir=pd,
                              tfc=self.args.tfc, threads=2)
        except pytfc.Error as e:
            res.add(False, "expert_counts-compile", tail(str(e)))
            return
        fwd = m.entry_arrays("forward")
        want = ("expert_counts", 1, 1, (cfg.depth, cfg.experts))  # i32, an output
        if fwd[-1] != want or (backward and any(
                "expert_counts" in a[0] for a in m.entry_arrays("backward"))):
            res.add(False, "expert_counts-abi",
                    f"forward arrays {fwd}" + (f", backward arrays "
                                               f"{m.entry_arrays('backward')}"
                                               if backward else "") +
                    f"; want forward to end with {want} and backward without it")
            return
        res.add(True, "expert_counts-abi", f"forward ends with {want}")
        m.params[:] = flat
        bf16 = spec.bf16
        out_name = cfg.output_names()[0]
        for b, s, t, _ in _clamp(spec, [(1, 1, 1, 0), (3, 5, 4, 0), (4, 8, 6, 0)]):
            case = f"expert_counts b={b} s={s}" + (f" enc={t}" if cfg.cross else "")
            d = os.path.join(pd, f"b{b}_s{s}")
            try:
                inputs = self.write_inputs(spec, d, rng, b, s, t, grad=True, model=model,
                                           res=res)
            except CaseFailed as e:
                res.add(False, case, str(e))
                continue
            given = {k: v for k, v in inputs.items() if not k.startswith("d_")}
            try:
                out = m.forward(**given)
                if backward:
                    m.zero_grad()
                    seeds = {k: v for k, v in inputs.items() if k.startswith("d_")}
                    lengths = {"lengths": inputs["lengths"]} if cfg.key_padding else {}
                    igrads = m.backward(**seeds, **lengths)
            except pytfc.Error as e:
                res.add(False, case, f"python/tfc: {e}")
                continue
            refs = self.reference(model, inputs)
            counts = model.expert_counts.copy()
            msgs, ok = [], True
            got = np.asarray(out["expert_counts"])
            if got.dtype != np.int32 or not np.array_equal(got, counts):
                ok = False
                msgs.append(f"expert_counts {got.tolist()} ({got.dtype}) != oracle's "
                            f"{counts.tolist()}")
            else:
                msgs.append(f"expert_counts {got.tolist()} exact")
            for name, ref in zip(cfg.output_names(), refs):
                o = np.asarray(out[name], dtype=np.float64).reshape(ref.shape)
                good, msg, _ = compare(o, ref, self.args.bf16_rtol if bf16 else self.args.rtol)
                ok &= good
                msgs.append(f"{name}: {msg}")
            if backward:
                ours = {"d_params": m.grads.copy()}
                for k in ("d_x", "d_enc"):
                    if k in igrads:
                        ours[k] = np.asarray(igrads[k]).reshape(-1)
                good, gmsg = self.check_grads(
                    model, ours, self.reference_grads(model, inputs),
                    self.args.bf16_grad_rtol if bf16 else self.args.grad_rtol, res, case,
                    "bf16 " if bf16 else "")
                ok &= good
                msgs.append(gmsg)
            res.add(ok, case, "; ".join(msgs))

    def check_padding(self, spec, model, flat, rng, res):
        """key_padding: (a) padding-invariance: new values at the padded
        positions (x / tokens, targets, d_y / d_logits) leave the valid
        output rows, the loss and every gradient bit-identical (padded keys
        are hidden, padded rows' outputs are constant 0); (b) with a loss,
        grad-padded-targets-only: valid targets only at padded positions
        give a loss and gradients of exactly 0 (with a load-balancing loss:
        that loss alone, check_aux_only)."""
        cfg = spec.cfg
        backward = "--forward-only" not in self.args.tfc_arg
        flags = ["-b"] if backward else []
        b, s, t = min(3, spec.max_batch), min(37, cfg.max_seq), min(11, cfg.max_seq)
        da = os.path.join(self.sdir(spec), "pad_invariance_a")
        db = os.path.join(self.sdir(spec), "pad_invariance_b")
        inputs = self.write_inputs(spec, da, rng, b, s, t, grad=True, model=model, res=res)
        other = self.write_inputs(spec, db, rng, b, s, t, grad=True)  # valid part: inputs'
        lengths = inputs["lengths"]
        pad = np.arange(s)[None, :] >= lengths[:, None]
        for name, a in inputs.items():
            if name in ("lengths", "enc"):
                other[name] = a
            else:  # keep the valid positions, new values at the padded ones
                other[name][~pad] = a[~pad]
        for name, a in other.items():
            a.tofile(os.path.join(db, name + ".bin"))
        names = list(cfg.output_names())
        if backward:
            names += ["d_params"] + (["d_x"] if not cfg.has_embedding else []) + \
                (["d_enc"] if cfg.cross else [])
        msgs, ok = [], True
        for d in (da, db):
            flat.tofile(os.path.join(d, "params.bin"))
            rc, out = self.harness(spec, d, b, s, t, 2, flags=flags)
            if rc != 0:
                res.add(False, "padding-invariance", f"harness exited {rc}" + tail(out))
                return
        for name in names:
            x = np.fromfile(os.path.join(da, name + ".bin"), dtype=np.float32)
            y = np.fromfile(os.path.join(db, name + ".bin"), dtype=np.float32)
            if name in ("y", "logits", "d_x"):  # valid rows only
                x, y = x.reshape(b, s, -1)[~pad], y.reshape(b, s, -1)[~pad]
            if not np.all(np.isfinite(x)) or not np.all(np.isfinite(y)):
                ok = False
                msgs.append(f"{name} not finite: {int((~np.isfinite(x)).sum())} and "
                            f"{int((~np.isfinite(y)).sum())} of {x.size} values")
            elif not np.array_equal(x, y):
                diff = np.abs(x.astype(np.float64) - y).reshape(-1)
                k = int(diff.argmax())
                ok = False
                msgs.append(f"{name} differs: max|diff| = {float(diff[k]):.3g} "
                            f"at flat [{k}] ({x.reshape(-1)[k]:.9g} vs {y.reshape(-1)[k]:.9g})")
        res.add(ok, f"padding-invariance b={b} s={s} lengths={list(map(int, lengths))}",
                "; ".join(msgs) if msgs else
                f"{', '.join(names)} bit-identical with other values at the "
                f"{int(pad.sum())} padded positions")

        if not cfg.has_loss:
            return
        d = os.path.join(self.sdir(spec), "grad_padded_targets_only")
        inputs = self.write_inputs(spec, d, rng, b, s, t, grad=True, model=model, res=res)
        pad = np.arange(s)[None, :] >= inputs["lengths"][:, None]
        tgt = rng.integers(0, cfg.vocab, (b, s)).astype(np.int32)
        tgt[~pad] = -1
        inputs["targets"] = tgt
        tgt.tofile(os.path.join(d, "targets.bin"))
        flat.tofile(os.path.join(d, "params.bin"))
        rc, out = self.harness(spec, d, b, s, t, 0, flags=flags)
        if rc != 0:
            res.add(False, "grad-padded-targets-only", f"harness exited {rc}" + tail(out))
            return
        if cfg.aux_loss > 0:
            self.check_aux_only(spec, model, d, inputs, res,
                                f"grad-padded-targets-only ({int(pad.sum())} targets, "
                                "all at padded positions)", backward)
            return
        loss = float(np.fromfile(os.path.join(d, "loss.bin"), dtype=np.float32)[0])
        nonzero = {} if not backward else {
            k: float(np.abs(v).max()) for k, v in self.read_grads(d, model).items()
            if not np.all(v == 0)}
        good = loss == 0.0 and not nonzero
        res.add(good, "grad-padded-targets-only",
                f"{int(pad.sum())} targets, all at padded positions: " +
                ("loss and gradients exactly 0" if good else
                 f"loss = {loss:.7g}, nonzero gradients (max |.|): {nonzero}"))


# ---------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--tfc", default="tfc", help="the tfc executable")
    ap.add_argument("--tfc-arg", action="append", default=[],
                    help="an extra argument for tfc when it compiles (e.g. --mattr=+avx2)")
    ap.add_argument("--runtime-lib", required=True, help="directory of libtfc_runtime.a")
    ap.add_argument("--include", required=True, help="runtime include dir (tfc/runtime.h)")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"), help="C compiler (default $CC or cc)")
    ap.add_argument("--ldflags", default="", help="extra flags for linking the harness")
    ap.add_argument("--quick", action="store_true", help="a small subset (the lit test)")
    ap.add_argument("--pairwise", action="store_true",
                    help="of the 84 blocks only the 21 that hold every pair of "
                    "(norm, position, activation, mask) values, and the quick ones")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--keep", metavar="DIR", help="work in DIR and keep it")
    ap.add_argument("--filter", metavar="REGEX", help="only specs whose name matches")
    ap.add_argument("--list", action="store_true", help="list the specs and exit")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rtol", type=float, default=1e-4, help="forward bound")
    ap.add_argument("--grad-rtol", type=float, default=1e-3,
                    help="gradient bound (relative, per tensor; see GRAD_FLOOR)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per command")
    ap.add_argument("--compare-unfused", nargs="?", const="all", default=None,
                    choices=("all", "quick"),
                    help="also build with --no-fusion and compare (step 8): every "
                    "spec, or (=quick) those of the quick subset")
    ap.add_argument("--fusion-rtol", type=float, default=1e-5,
                    help="fused vs unfused bound (relative, per tensor)")
    ap.add_argument("--bf16-rtol", type=float, default=1e-2,
                    help="forward bound of dtype = bf16 specs (against the rounded oracle)")
    ap.add_argument("--bf16-grad-rtol", type=float, default=5e-2,
                    help="gradient bound of dtype = bf16 specs")
    ap.add_argument("--bf16-fusion-rtol", type=float, default=2e-2,
                    help="fused vs unfused bound of dtype = bf16 specs")
    ap.add_argument("--moe-min-gap", type=float, default=1e-5,
                    help="MoE: inputs whose routing has a valid token's k-th and "
                    "(k+1)-th router probabilities closer than this (relative) are "
                    "drawn again (f32 logits)")
    ap.add_argument("--moe-min-gap-bf16", type=float, default=1e-2,
                    help="the same for dtype = bf16 specs (bf16 router operands: a "
                    "round-off in the hidden state can flip one operand's rounding)")
    ap.add_argument("--bf16-rms-ratio", type=float, default=0.5,
                    help="bound of rounding_ratio for dtype = bf16 specs")
    ap.add_argument("--generic", action="store_true",
                    help="the harness calls forward and backward through "
                    "NAME_model()'s generic entry points")
    ap.add_argument("--cuda", action="store_true",
                    help="compile with --target=cuda and run the harness on the GPU "
                    "(or on the CPU emulator: --tfc naming tfc-emu and "
                    "TFC_CUDA_DRIVER naming libtfc_cuda_emu.so)")
    args = ap.parse_args(argv)
    if args.cuda:
        args.tfc_arg = ["--target=cuda"] + args.tfc_arg
    # Forward and backward are checked here, decoding by decode_check.py:
    # training builds, without NAME_prefill and NAME_decode (a third less
    # compile time for a causal spec; the forward and backward code is the
    # same).
    args.tfc_arg = ["--no-decoding"] + args.tfc_arg

    specs = all_specs(pairwise=args.pairwise)
    if args.quick:
        specs = [s for s in specs if s.quick]
    if args.filter:
        specs = [s for s in specs if re.search(args.filter, s.name)]
    if args.list:
        for s in specs:
            print(s.name, shapes_for(s, args.quick, args.generic))
        return 0
    if not specs:
        print("no specs selected")
        print("0 passed, 1 failed")
        return 1

    tfc = shutil.which(args.tfc)
    if tfc is None:
        print(f"error: tfc not found: {args.tfc}")
        print("0 passed, 1 failed")
        return 1
    args.tfc = os.path.abspath(tfc)
    args.include = os.path.abspath(args.include)
    args.runtime_lib = os.path.abspath(args.runtime_lib)
    torch.set_num_threads(1)

    if args.keep:
        work = os.path.abspath(args.keep)
        os.makedirs(work, exist_ok=True)
    else:
        work = tempfile.mkdtemp(prefix="tfc-conformance-")
    runner = Runner(args, work)
    passed = failed = 0
    worst = {}
    lock = threading.Lock()
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        for fut in concurrent.futures.as_completed(
                [pool.submit(runner.run_spec, s) for s in specs]):
            res = fut.result()
            with lock:
                for line in res.lines:
                    print(line)
                sys.stdout.flush()
                passed += res.passed
                failed += res.failed
                for kind, (err, where) in res.worst.items():
                    if kind not in worst or err > worst[kind][0]:
                        worst[kind] = (err, where)
    if not args.keep:
        if failed:
            print(f"(work files kept in {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)
    order = ["forward", "d_params", "d_params (vanishing)", "d_x", "d_enc",
             "accumulate d_params", "accumulate d_params (vanishing)",
             "accumulate d_x", "accumulate d_enc"]
    for kind in sorted(worst, key=lambda k: order.index(k) if k in order else 99):
        err, where = worst[kind]
        print(f"worst {kind}: {err:.3g} ({where})")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
