#!/usr/bin/python3
"""Checks the oracle (oracle.py) against independent references.

- torch.nn.TransformerEncoderLayer / TransformerDecoderLayer (pre and post
  LayerNorm, causal and bidirectional, relu / gelu / gelu_tanh / silu, cross
  attention) with the oracle's weights copied in;
- a separate NumPy implementation of docs/abi.md (RMSNorm, gated FFNs,
  DeepNorm, embeddings, positions, tied head, cross-entropy with ignored
  targets) -- written without torch, so shared bugs are unlikely;
- F.cross_entropy(ignore_index=...) for the loss, the classic Vaswani formula
  for sinusoidal positions;
- the layout (contiguity, the layout-JSON cross-check, spec defaults) and
  autograd (torch.autograd.gradcheck, flat_grad against finite differences);
- [attention] key_padding: nn.TransformerEncoderLayer's src_key_padding_mask;
  each row of a padded batch against the same model without key_padding run
  on that row alone, truncated to its length (outputs, loss, every gradient;
  padded output rows and d_x rows exactly 0); valid rows unchanged when the
  padded positions' inputs, targets and output gradients change; lengths =
  seq everywhere equal to the model without key_padding; gradcheck; the
  spec / argument errors.
- [residual] streams > 1, hyper-connections (docs/hyper_connections.md):
  Sinkhorn-Knopp's row and column sums (and a literal NumPy Eq. 9); a
  hand-computed n = 2, C = 2 layer of each mixing against explicit scalar
  formulas; streams = 1 exactly today's model; HC (and mHC, n = 2) at its
  init equal to the single-stream model wherever the streams stay equal;
  gradcheck through mHC / HC blocks (parameters and inputs) and the unrolled
  Sinkhorn; the layout, the init values and the spec errors; key padding.

Prints one line per check and `N passed, M failed`; exits nonzero on failure.
"""

import math
import os
import sys
import traceback

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from oracle import (Bf16Matmul, Config, Oracle, check_layout_json, compute_layout,
                    hc_home_stream, hc_init_values, hc_sublayers, round_bf16, sinkhorn,
                    sinusoidal_positions)

torch.set_num_threads(1)
F64 = torch.float64


def spec(model="", norm="", ffn="", attention="", extra="", name="t"):
    return Config.from_string(f'name = "{name}"\n[model]\n{model}\n[norm]\n{norm}\n'
                              f'[ffn]\n{ffn}\n[attention]\n{attention}\n{extra}')


def random_flat(model, rng, scale=0.3):
    """Random parameters; norm weights around 1 so nothing degenerates."""
    flat = np.zeros(model.param_count, dtype=np.float32)
    for name, offset, shape in model.layout:
        n = math.prod(shape)
        v = rng.standard_normal(n) * scale
        if "norm" in name and name.endswith("weight"):
            v = 1.0 + 0.2 * rng.standard_normal(n)
        flat[offset:offset + n] = v
    return flat


def P(model, name):
    return model.get_parameter(name).detach()


def maxerr(a, b):
    a = a.detach().double() if isinstance(a, torch.Tensor) else torch.as_tensor(a, dtype=F64)
    b = b.detach().double() if isinstance(b, torch.Tensor) else torch.as_tensor(b, dtype=F64)
    assert a.shape == b.shape, (a.shape, b.shape)
    return (a - b).abs().max().item()


# --- torch.nn layers with the oracle's weights ----------------------------

def copy_mha(mha, model, prefix):
    g = lambda n: P(model, prefix + n)
    mha.in_proj_weight.copy_(torch.cat([g("wq.weight").t(), g("wk.weight").t(),
                                        g("wv.weight").t()]))
    mha.in_proj_bias.copy_(torch.cat([g("wq.bias"), g("wk.bias"), g("wv.bias")]))
    mha.out_proj.weight.copy_(g("wo.weight").t())
    mha.out_proj.bias.copy_(g("wo.bias"))


def copy_norm(ln, model, prefix):
    ln.weight.copy_(P(model, prefix + ".weight"))
    ln.bias.copy_(P(model, prefix + ".bias"))


def copy_ffn(layer, model, prefix):
    layer.linear1.weight.copy_(P(model, prefix + "w_up.weight").t())
    layer.linear1.bias.copy_(P(model, prefix + "w_up.bias"))
    layer.linear2.weight.copy_(P(model, prefix + "w_down.weight").t())
    layer.linear2.bias.copy_(P(model, prefix + "w_down.bias"))


TORCH_ACT = {"relu": "relu", "gelu": "gelu",
             "gelu_tanh": lambda z: F.gelu(z, approximate="tanh"), "silu": F.silu}


def check_encoder(position, activation, mask, rng):
    cfg = spec(model="d_model = 24\nn_heads = 3\nd_ff = 40\ndepth = 2\nmax_seq = 16",
               norm=f'position = "{position}"\neps = 1e-6',
               ffn=f'activation = "{activation}"', attention=f'mask = "{mask}"')
    model = Oracle(cfg, F64)
    model.load_flat(random_flat(model, rng))
    layers = []
    with torch.no_grad():
        for i in range(cfg.depth):
            layer = nn.TransformerEncoderLayer(
                24, 3, 40, dropout=0.0, activation=TORCH_ACT[activation],
                layer_norm_eps=1e-6, batch_first=True, norm_first=position == "pre",
                dtype=F64)
            p = f"blocks.{i}."
            copy_mha(layer.self_attn, model, p + "attn.")
            copy_norm(layer.norm1, model, p + "attn_norm")
            copy_norm(layer.norm2, model, p + "ffn_norm")
            copy_ffn(layer, model, p + "ffn.")
            layers.append(layer.train())  # train(): no fast path; dropout is 0
        final = None
        if cfg.final:
            final = nn.LayerNorm(24, eps=1e-6, dtype=F64)
            copy_norm(final, model, "final_norm")
        x = torch.from_numpy(rng.standard_normal((2, 11, 24)))
        mask_t = (torch.ones(11, 11, dtype=torch.bool).triu(1) if mask == "causal" else None)
        ref = x
        for layer in layers:
            ref = layer(ref, src_mask=mask_t)
        if final is not None:
            ref = final(ref)
        (y,) = model(x)
    return maxerr(y, ref)


def check_encoder_key_padding(mask, rng):
    """Valid rows against nn.TransformerEncoderLayer with a key padding mask
    (padded rows: the oracle writes 0, torch its own values)."""
    cfg = spec(model="d_model = 24\nn_heads = 3\nd_ff = 40\ndepth = 2\nmax_seq = 16",
               norm='position = "post"', ffn='activation = "gelu"',
               attention=f'mask = "{mask}"\nkey_padding = true')
    model = Oracle(cfg, F64)
    model.load_flat(random_flat(model, rng))
    b, s = 3, 11
    lengths = np.array([s, 5, 1])
    pad = torch.arange(s)[None, :] >= torch.from_numpy(lengths)[:, None]
    with torch.no_grad():
        ref = x = torch.from_numpy(rng.standard_normal((b, s, 24)))
        mask_t = torch.ones(s, s, dtype=torch.bool).triu(1) if mask == "causal" else None
        for i in range(cfg.depth):
            layer = nn.TransformerEncoderLayer(24, 3, 40, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=False, dtype=F64)
            p = f"blocks.{i}."
            copy_mha(layer.self_attn, model, p + "attn.")
            copy_norm(layer.norm1, model, p + "attn_norm")
            copy_norm(layer.norm2, model, p + "ffn_norm")
            copy_ffn(layer, model, p + "ffn.")
            ref = layer.train()(ref, src_mask=mask_t, src_key_padding_mask=pad)
        (y,) = model(x, lengths=lengths)
    assert torch.all(y[pad] == 0), "padded rows are not 0"
    return maxerr(y[~pad], ref[~pad])


def check_decoder(position, mask, rng):
    cfg = spec(model="d_model = 16\nn_heads = 4\nd_ff = 24\ndepth = 2\nmax_seq = 16",
               norm=f'position = "{position}"', ffn='activation = "relu"',
               attention=f'mask = "{mask}"\ncross = true')
    model = Oracle(cfg, F64)
    model.load_flat(random_flat(model, rng))
    with torch.no_grad():
        x = torch.from_numpy(rng.standard_normal((3, 7, 16)))
        enc = torch.from_numpy(rng.standard_normal((3, 5, 16)))
        ref = x
        for i in range(cfg.depth):
            layer = nn.TransformerDecoderLayer(
                16, 4, 24, dropout=0.0, activation="relu", batch_first=True,
                norm_first=position == "pre", dtype=F64)
            p = f"blocks.{i}."
            copy_mha(layer.self_attn, model, p + "attn.")
            copy_mha(layer.multihead_attn, model, p + "cross.")
            copy_norm(layer.norm1, model, p + "attn_norm")
            copy_norm(layer.norm2, model, p + "cross_norm")
            copy_norm(layer.norm3, model, p + "ffn_norm")
            copy_ffn(layer, model, p + "ffn.")
            m = torch.ones(7, 7, dtype=torch.bool).triu(1) if mask == "causal" else None
            ref = layer.train()(ref, enc, tgt_mask=m)
        if cfg.final:
            final = nn.LayerNorm(16, dtype=F64)
            copy_norm(final, model, "final_norm")
            ref = final(ref)
        (y,) = model(x, enc)
    return maxerr(y, ref)


# --- a NumPy implementation of docs/abi.md --------------------------------

def np_weights(cfg, flat):
    """W(name): the tensor `name` of the flat buffer (float64); has(name)."""
    flat = np.asarray(flat, dtype=np.float64)
    offsets = {n: (o, s) for n, o, s in compute_layout(cfg)[0]}

    def W(name):
        o, s = offsets[name]
        return flat[o:o + math.prod(s)].reshape(s)
    return W, offsets.__contains__


def np_act(name, z):
    erf = np.vectorize(math.erf)
    return {"relu": lambda: np.maximum(z, 0),
            "gelu": lambda: 0.5 * z * (1 + erf(z / math.sqrt(2))),
            "gelu_tanh": lambda: 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                        * (z + 0.044715 * z ** 3))),
            "silu": lambda: z / (1 + np.exp(-z))}[name]()


def np_moe(cfg, W, has, prefix, rows):
    """The routed experts of docs/abi.md on `rows` [N, d] (valid tokens
    only), one token at a time: softmax of the router's logits, the top_k
    by (-p, index), gates, the experts' FFNs. Returns (out [N, d], counts
    [E] ints, aux: alpha E sum_e (counts_e / N) (mean p_e))."""
    E, k = cfg.experts, cfg.top_k
    gate_act = {"swiglu": "silu", "geglu": "gelu", "reglu": "relu"}.get(cfg.activation)

    def lin(x, w, e):
        y = x @ W(f"{prefix}experts.{w}.weight")[e]
        b = f"{prefix}experts.{w}.bias"
        return y + W(b)[e] if has(b) else y

    def expert(x, e):
        if gate_act:
            hdn = np_act(gate_act, lin(x, "w_gate", e)) * lin(x, "w_up", e)
        else:
            hdn = np_act(cfg.activation, lin(x, "w_up", e))
        return lin(hdn, "w_down", e)

    out = np.zeros_like(rows)
    counts = np.zeros(E, dtype=np.int64)
    psum = np.zeros(E)
    for n, x in enumerate(rows):
        logits = x @ W(prefix + "router.weight")
        q = np.exp(logits - logits.max())
        q /= q.sum()
        chosen = sorted(range(E), key=lambda e: (-q[e], e))[:k]
        g = q[chosen] / (q[chosen].sum() if cfg.renormalize else 1.0)
        for j, e in enumerate(chosen):
            out[n] += g[j] * expert(x, e)
            counts[e] += 1
        psum += q
    N = len(rows)
    aux = cfg.aux_loss * E * float(np.sum(counts / N * psum / N)) if N else 0.0
    return out, counts, aux


def np_reference(cfg, flat, inp, enc=None, targets=None, extras=None):
    """extras (a dict), for MoE: gets "counts" and "aux" per layer."""
    flat = flat.astype(np.float64)
    offsets = {n: (o, s) for n, o, s in compute_layout(cfg)[0]}

    def W(name):
        o, s = offsets[name]
        return flat[o:o + math.prod(s)].reshape(s)

    def has(name):
        return name in offsets

    def norm(x, prefix):
        if cfg.norm_type == "layernorm":
            mu = x.mean(-1, keepdims=True)
            var = ((x - mu) ** 2).mean(-1, keepdims=True)
            return (x - mu) / np.sqrt(var + cfg.eps) * W(prefix + ".weight") + W(prefix + ".bias")
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg.eps) * W(prefix + ".weight")

    def lin(x, prefix):
        y = x @ W(prefix + ".weight")
        return y + W(prefix + ".bias") if has(prefix + ".bias") else y

    erf = np.vectorize(math.erf)

    def act(name, z):
        return {"relu": lambda: np.maximum(z, 0),
                "gelu": lambda: 0.5 * z * (1 + erf(z / math.sqrt(2))),
                "gelu_tanh": lambda: 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi)
                                                            * (z + 0.044715 * z ** 3))),
                "silu": lambda: z / (1 + np.exp(-z))}[name]()

    def attention(u, z, prefix, causal):
        b, s, d = u.shape
        t = z.shape[1]
        H, dh = cfg.n_heads, cfg.head_dim
        q, k, v = lin(u, prefix + "wq"), lin(z, prefix + "wk"), lin(z, prefix + "wv")
        out = np.zeros((b, s, d))
        for bi in range(b):
            for h in range(H):
                cols = slice(h * dh, (h + 1) * dh)
                S = q[bi, :, cols] @ k[bi, :, cols].T / math.sqrt(dh)
                for i in range(s):
                    row = S[i].copy()
                    if causal:
                        row[i + 1:] = -np.inf
                    e = np.exp(row - row.max())
                    out[bi, i, cols] = (e / e.sum()) @ v[bi, :, cols]
        return lin(out, prefix + "wo")

    def dense_ffn(u, p):
        if cfg.activation in ("swiglu", "geglu", "reglu"):
            gate = {"swiglu": "silu", "geglu": "gelu", "reglu": "relu"}[cfg.activation]
            hdn = act(gate, lin(u, p + "w_gate")) * lin(u, p + "w_up")
        else:
            hdn = act(cfg.activation, lin(u, p + "w_up"))
        return lin(hdn, p + "w_down")

    moe = {"counts": [], "aux": []} if extras is None else extras
    moe.setdefault("counts", [])
    moe.setdefault("aux", [])

    def ffn(u, p):
        if not cfg.moe:
            return dense_ffn(u, p)
        out, counts, aux = np_moe(cfg, W, has, p, u.reshape(-1, u.shape[-1]))
        moe["counts"].append(counts)
        moe["aux"].append(aux)
        out = out.reshape(u.shape)
        return out + dense_ffn(u, p + "shared.") if cfg.shared_experts else out

    def sub(x, nname, f):
        if cfg.position == "pre":
            return x + f(norm(x, nname))
        return norm(cfg.alpha * x + f(x), nname)

    if cfg.has_embedding:
        b, s = inp.shape
        h = W("embed.tokens")[inp]
        if cfg.positions == "learned":
            h = h + W("embed.positions")[:s]
        elif cfg.positions == "sinusoidal":
            pe = np.zeros((s, cfg.d_model))
            for pos in range(s):
                for c in range(cfg.d_model):
                    a = pos / 10000 ** ((c - c % 2) / cfg.d_model)
                    pe[pos, c] = math.sin(a) if c % 2 == 0 else math.cos(a)
            h = h + pe
    else:
        h = inp.astype(np.float64)
    for i in range(cfg.depth):
        p = f"blocks.{i}."
        h = sub(h, p + "attn_norm", lambda u: attention(u, u, p + "attn.", cfg.mask == "causal"))
        if cfg.cross:
            h = sub(h, p + "cross_norm", lambda u: attention(u, enc, p + "cross.", False))
        h = sub(h, p + "ffn_norm", lambda u: ffn(u, p + "ffn."))
    if cfg.final:
        h = norm(h, "final_norm")
    if not cfg.has_head:
        return [h]
    logits = h @ (W("embed.tokens").T if cfg.tied else W("head.weight"))
    if not cfg.has_loss:
        return [logits]
    total, count = 0.0, 0
    for bi in range(logits.shape[0]):
        for i in range(logits.shape[1]):
            tgt = targets[bi, i]
            if tgt >= 0:
                row = logits[bi, i]
                m = row.max()
                total += m + math.log(np.exp(row - m).sum()) - row[tgt]
                count += 1
    loss = total / count if count else 0.0
    if cfg.moe and cfg.aux_loss > 0:
        for aux in moe["aux"]:
            loss += aux
    return [logits, loss]


def check_numpy(cfg_text, rng, b=2, s=9, t=6):
    cfg = Config.from_string(cfg_text)
    model = Oracle(cfg, F64)
    flat = random_flat(model, rng)
    model.load_flat(flat)
    d = cfg.d_model
    if cfg.has_embedding:
        inp = rng.integers(0, cfg.vocab, (b, s)).astype(np.int32)
    else:
        inp = rng.standard_normal((b, s, d)).astype(np.float32)
    enc = rng.standard_normal((b, t, d)).astype(np.float32) if cfg.cross else None
    tgt = None
    if cfg.has_loss:
        tgt = rng.integers(0, cfg.vocab, (b, s)).astype(np.int32)
        tgt[0, ::3] = -1
    with torch.no_grad():
        outs = model(inp, enc, tgt)
    refs = np_reference(cfg, flat, inp, enc, tgt)
    assert len(outs) == len(refs) == len(cfg.output_names())
    return max(maxerr(o, r) for o, r in zip(outs, refs))


NUMPY_SPECS = {
    "rms_pre_swiglu_causal": 'name="a"\n[model]\nd_model=16\nn_heads=2\ndepth=2\nmax_seq=16\n'
                             '[norm]\ntype="rmsnorm"\n[ffn]\nactivation="swiglu"\nmultiple_of=8',
    "ln_post_geglu_bidir_nobias": 'name="a"\n[model]\nd_model=12\nn_heads=3\nd_ff=20\ndepth=2\n'
                                  'max_seq=16\nbias=false\n[norm]\nposition="post"\n'
                                  '[ffn]\nactivation="geglu"\n[attention]\nmask="bidirectional"',
    "rms_deepnorm_reglu": 'name="a"\n[model]\nd_model=16\nn_heads=4\nd_ff=24\ndepth=3\nmax_seq=16\n'
                          '[norm]\ntype="rmsnorm"\nposition="deepnorm"\n[ffn]\nactivation="reglu"',
    "ln_deepnorm_cross_final_gelu_tanh": 'name="a"\n[model]\nd_model=16\nn_heads=2\nd_ff=32\n'
                                         'depth=2\nmax_seq=16\n[norm]\nposition="deepnorm"\n'
                                         'final=true\n[ffn]\nactivation="gelu_tanh"\n'
                                         '[attention]\ncross=true',
    "rms_post_cross_silu_alpha": 'name="a"\n[model]\nd_model=8\nn_heads=2\nd_ff=16\nmax_seq=16\n'
                                 '[norm]\ntype="rmsnorm"\nposition="deepnorm"\n'
                                 'deepnorm_alpha=1.7\neps=1e-3\n[ffn]\nactivation="silu"\n'
                                 '[attention]\ncross=true\nmask="bidirectional"',
    "embed_learned_untied_loss": 'name="a"\n[model]\nd_model=16\nn_heads=2\nd_ff=32\ndepth=2\n'
                                 'max_seq=16\n[embedding]\nvocab=23\n[head]\nloss="cross_entropy"',
    "embed_sin_tied_loss": 'name="a"\n[model]\nd_model=12\nn_heads=2\nd_ff=16\nmax_seq=16\n'
                           '[norm]\ntype="rmsnorm"\n[embedding]\nvocab=19\npositions="sinusoidal"\n'
                           '[head]\ntied=true\nloss="cross_entropy"',
    "embed_none_logits_post": 'name="a"\n[model]\nd_model=8\nn_heads=1\nd_ff=16\nmax_seq=16\n'
                              '[norm]\nposition="post"\n[embedding]\nvocab=11\npositions="none"\n'
                              '[head]\ntied=false',
    "embed_no_head": 'name="a"\n[model]\nd_model=8\nn_heads=2\nd_ff=16\nmax_seq=16\n'
                     '[embedding]\nvocab=7\npositions="sinusoidal"',
}


# --- [attention] key_padding ---------------------------------------------

def _pad_spec(body):
    return f'name="p"\n[model]\n{body[0]}\n[attention]\nkey_padding=true\n{body[1]}\n{body[2]}'


PAD_SPECS = {  # (model, [attention] keys, other sections)
    "bert": ('d_model=16\nn_heads=2\nd_ff=24\ndepth=2\nmax_seq=16',
             'mask="bidirectional"',
             '[norm]\nposition="post"\n[embedding]\nvocab=13\npositions="learned"\n'
             '[head]\ntied=true\nloss="cross_entropy"'),
    "llama_rope_gqa_ce": ('d_model=16\nn_heads=4\ndepth=2\nmax_seq=16\nbias=false',
                          'n_kv_heads=2\npositions="rope"',
                          '[norm]\ntype="rmsnorm"\n[ffn]\nactivation="swiglu"\nmultiple_of=8\n'
                          '[embedding]\nvocab=11\npositions="none"\n[head]\nloss="cross_entropy"'),
    "window_alibi_bi": ('d_model=16\nn_heads=4\nd_ff=24\ndepth=2\nmax_seq=16',
                        'mask="bidirectional"\nsliding_window=3\npositions="alibi"', ''),
    "window_causal_sin_logits": ('d_model=16\nn_heads=2\nd_ff=24\ndepth=2\nmax_seq=16',
                                 'sliding_window=2',
                                 '[embedding]\nvocab=9\npositions="sinusoidal"\n[head]'),
    "cross": ('d_model=16\nn_heads=2\nd_ff=24\ndepth=2\nmax_seq=16',
              'cross=true', '[norm]\ntype="rmsnorm"\nposition="deepnorm"'),
    "qknorm_headdim_bi": ('d_model=16\nn_heads=4\nd_ff=24\ndepth=2\nmax_seq=16',
                          'mask="bidirectional"\nqk_norm="layernorm"\nhead_dim=6', ''),
    # Mixture of experts: padded tokens are not routed (a block with shared
    # experts; a top-1 Switch LM whose loss has no load-balancing term, so
    # that each row is the truncated model's; and one with it, which pools
    # the valid tokens of every row: no truncation check, see PAD_POOLED).
    "moe_block_shared": ('d_model=16\nn_heads=2\nd_ff=24\ndepth=2\nmax_seq=16',
                         'mask="bidirectional"',
                         '[ffn]\nactivation="swiglu"\nexperts=4\nshared_experts=1'),
    "moe_lm_switch_noaux": ('d_model=16\nn_heads=2\nd_ff=24\ndepth=2\nmax_seq=16',
                            '', '[ffn]\nexperts=4\ntop_k=1\nrenormalize=false\n'
                            'aux_loss=0.0\n[embedding]\nvocab=11\n[head]\n'
                            'loss="cross_entropy"'),
    "moe_lm_aux": ('d_model=16\nn_heads=2\nd_ff=24\ndepth=2\nmax_seq=16\nbias=false', '',
                   '[norm]\ntype="rmsnorm"\n[ffn]\nactivation="geglu"\nexperts=4\n'
                   'top_k=2\naux_loss=0.1\n[embedding]\nvocab=11\n[head]\n'
                   'loss="cross_entropy"'),
}
# The load-balancing loss averages over the batch's valid tokens: a row run
# alone is not a share of it.
PAD_POOLED = {"moe_lm_aux"}


def pad_models(key, rng):
    """The key_padding spec's oracle and the same spec without key_padding,
    on the same random parameters."""
    text = _pad_spec({**PAD_SPECS, **HC_PAD_SPECS}[key])
    padded = Oracle(Config.from_string(text), F64)
    plain = Oracle(Config.from_string(text.replace("key_padding=true", "key_padding=false")),
                   F64)
    assert padded.cfg.key_padding and not plain.cfg.key_padding
    flat = random_flat(padded, rng)
    padded.load_flat(flat)
    plain.load_flat(flat)
    return padded, plain


def pad_inputs(cfg, rng, b, s, t):
    d = {}
    if cfg.has_embedding:
        d["inp"] = rng.integers(0, cfg.vocab, (b, s))
    else:
        d["inp"] = rng.standard_normal((b, s, cfg.d_model))
    d["enc"] = rng.standard_normal((b, t, cfg.d_model)) if cfg.cross else None
    d["targets"] = None
    if cfg.has_loss:
        d["targets"] = rng.integers(0, cfg.vocab, (b, s))
        d["targets"][rng.random((b, s)) < 0.2] = -1
    width = cfg.vocab if cfg.has_head else cfg.d_model
    d["d_out"] = rng.standard_normal((b, s, width))
    return d


def run_with_grads(model, inp, enc, targets, d_out, lengths=None):
    """Outputs, and the gradients of the loss (or of sum(out * d_out)):
    (outs, d_params, d_x or None, d_enc or None)."""
    cfg = model.cfg
    model.zero_grad(set_to_none=True)
    x = inp if cfg.has_embedding else torch.tensor(inp, dtype=F64, requires_grad=True)
    e = torch.tensor(enc, dtype=F64, requires_grad=True) if enc is not None else None
    outs = model(x, e, targets, lengths=lengths)
    scalar = outs[1] if cfg.has_loss else (outs[0] * torch.from_numpy(d_out)).sum()
    scalar.backward()
    res = ([o.detach() for o in outs], model.flat_grad(),
           None if cfg.has_embedding else x.grad.detach(),
           None if e is None else e.grad.detach())
    model.zero_grad(set_to_none=True)
    return res


def check_padding_truncated(key, rng, b=3, s=11, t=5):
    """Each row of a padded batch is the model without key_padding run on
    that row alone, truncated to its length: outputs, the loss (the mean
    over every row's valid targets) and every gradient; padded output rows
    and d_x rows exactly 0. Lengths s, 4 and 1: the short rows make empty
    windows for padded queries."""
    padded, plain = pad_models(key, rng)
    cfg = padded.cfg
    lengths = np.array([s, 4, 1])[rng.permutation(3)][:b]
    d = pad_inputs(cfg, rng, b, s, t)
    outs, g, gx, ge = run_with_grads(padded, d["inp"], d["enc"], d["targets"], d["d_out"],
                                     lengths)
    err = 0.0
    counts = [int((d["targets"][r, :lengths[r]] >= 0).sum()) if cfg.has_loss else 0
              for r in range(b)]
    total = sum(counts)
    want_g = np.zeros_like(g)
    want_loss = 0.0
    for r in range(b):
        L = int(lengths[r])
        tg = d["targets"][r:r + 1, :L] if cfg.has_loss else None
        enc = d["enc"][r:r + 1] if cfg.cross else None
        o, gr, gxr, ger = run_with_grads(plain, d["inp"][r:r + 1, :L], enc, tg,
                                         d["d_out"][r:r + 1, :L])
        assert torch.all(outs[0][r, L:] == 0), f"row {r}: padded output rows are not 0"
        err = max(err, maxerr(outs[0][r:r + 1, :L], o[0]))
        w = counts[r] / total if cfg.has_loss else 1.0
        if cfg.has_loss:
            want_loss += w * o[1].item()
            if counts[r] == 0:
                assert o[1].item() == 0.0
        want_g += w * gr
        if gx is not None:
            assert torch.all(gx[r, L:] == 0), f"row {r}: d_x of padded rows is not 0"
            err = max(err, maxerr(gx[r:r + 1, :L], w * gxr))
        if ge is not None:
            err = max(err, maxerr(ge[r:r + 1], w * ger))
    if cfg.has_loss:
        assert total > 0
        err = max(err, abs(outs[1].item() - want_loss))
    return max(err, float(np.abs(g - want_g).max()))


def check_padding_invariant(key, rng, b=3, s=9, t=4):
    """Changing the padded positions' inputs, targets and output gradients
    changes nothing in the valid rows, the loss or any gradient."""
    padded, _ = pad_models(key, rng)
    cfg = padded.cfg
    lengths = np.array([s, 3, 1])
    d = pad_inputs(cfg, rng, b, s, t)
    e = pad_inputs(cfg, rng, b, s, t)
    pad = np.arange(s)[None, :] >= lengths[:, None]
    for k in ("inp", "targets", "d_out"):
        if d[k] is not None:
            e[k][~pad] = d[k][~pad]
    e["enc"] = d["enc"]
    assert not np.array_equal(d["inp"], e["inp"])
    a = run_with_grads(padded, d["inp"], d["enc"], d["targets"], d["d_out"], lengths)
    z = run_with_grads(padded, e["inp"], e["enc"], e["targets"], e["d_out"], lengths)
    err = max(maxerr(x, y) for x, y in zip(a[0], z[0]))
    err = max(err, float(np.abs(a[1] - z[1]).max()))
    for x, y in zip(a[2:], z[2:]):
        if x is not None:
            err = max(err, maxerr(x, y))
    assert torch.all(a[0][0][torch.from_numpy(pad)] == 0)
    return err


def check_padding_full_length(key, rng, b=2, s=7, t=3):
    """lengths = seq everywhere: the model without key_padding, exactly."""
    padded, plain = pad_models(key, rng)
    d = pad_inputs(padded.cfg, rng, b, s, t)
    a = run_with_grads(padded, d["inp"], d["enc"], d["targets"], d["d_out"],
                       np.full(b, s))
    z = run_with_grads(plain, d["inp"], d["enc"], d["targets"], d["d_out"])
    err = max(maxerr(x, y) for x, y in zip(a[0], z[0]))
    err = max(err, float(np.abs(a[1] - z[1]).max()))
    for x, y in zip(a[2:], z[2:]):
        if x is not None:
            err = max(err, maxerr(x, y))
    return err


def check_padding_gradcheck(rng):
    """gradcheck through the padding masks (empty windows of padded queries
    included): d_x and d_enc."""
    cfg = Config.from_string(
        'name="g"\n[model]\nd_model=8\nn_heads=2\nd_ff=12\ndepth=2\nmax_seq=8\n'
        '[attention]\nkey_padding=true\nsliding_window=2\ncross=true\n'
        'positions="alibi"\n[norm]\ntype="rmsnorm"')
    model = Oracle(cfg, F64)
    model.load_flat(random_flat(model, rng))
    x = torch.from_numpy(rng.standard_normal((2, 6, 8))).requires_grad_()
    enc = torch.from_numpy(rng.standard_normal((2, 3, 8))).requires_grad_()
    lengths = np.array([2, 6])
    assert torch.autograd.gradcheck(lambda a, e: model(a, e, lengths=lengths)[0], (x, enc))
    (y,) = model(x, enc, lengths=lengths)
    y.backward(torch.from_numpy(rng.standard_normal(y.shape)))
    assert torch.all(x.grad[0, 2:] == 0) and torch.all(x.grad[0, :2] != 0)
    assert all(torch.all(torch.isfinite(p.grad)) for p in model.parameters())
    return 0.0


def check_padding_errors(rng):
    """key_padding must be a bool; lengths is required with it, refused
    without it, and must hold batch entries in [1, seq]."""
    for bad in ("1", '"true"', "0"):
        try:
            spec(model="d_model = 8\nn_heads = 2\nmax_seq = 8",
                 attention=f"key_padding = {bad}")
        except ValueError:
            continue
        raise AssertionError(f"accepted key_padding = {bad}")
    c = spec(model="d_model = 8\nn_heads = 2\nmax_seq = 8", attention="key_padding = true",
             extra='[embedding]\nvocab = 5\n[head]\nloss = "cross_entropy"')
    assert c.key_padding and c.input_names() == ["tokens", "lengths", "targets"], c.input_names()
    c2 = spec(model="d_model = 8\nn_heads = 2\nmax_seq = 8", attention="cross = true")
    assert not c2.key_padding and c2.input_names() == ["x", "enc"]
    model, plain = Oracle(c, F64), Oracle(c2, F64)
    tok, tgt = np.zeros((2, 4), dtype=np.int64), np.zeros((2, 4), dtype=np.int64)
    x, enc = np.zeros((2, 4, 8)), np.zeros((2, 3, 8))
    calls = [lambda: model(tok, targets=tgt),
             lambda: model(tok, targets=tgt, lengths=[4, 0]),
             lambda: model(tok, targets=tgt, lengths=[5, 4]),
             lambda: model(tok, targets=tgt, lengths=[4]),
             lambda: plain(x, enc, lengths=[4, 4])]
    for k, call in enumerate(calls):
        try:
            call()
        except ValueError:
            continue
        raise AssertionError(f"call #{k} accepted bad lengths")
    return 0.0


# --- loss, positions, layout, autograd -------------------------------------

def check_loss_vs_torch(rng):
    logits = torch.from_numpy(rng.standard_normal((3, 5, 13)))
    tgt = torch.from_numpy(rng.integers(0, 13, (3, 5)))
    tgt[1, 2] = -1
    tgt[2, :] = -7
    from oracle import cross_entropy_mean
    mine = cross_entropy_mean(logits, tgt)
    ref = F.cross_entropy(logits.reshape(-1, 13), torch.where(tgt < 0, -100, tgt).reshape(-1),
                          ignore_index=-100)
    none = cross_entropy_mean(logits, torch.full((3, 5), -1))
    assert none.item() == 0.0, none
    return abs(mine.item() - ref.item())


def check_sinusoidal():
    n, d = 50, 32
    pos = torch.arange(n, dtype=F64)[:, None]
    div = torch.exp(torch.arange(0, d, 2, dtype=F64) * (-math.log(10000.0) / d))
    ref = torch.zeros(n, d, dtype=F64)
    ref[:, 0::2] = torch.sin(pos * div)
    ref[:, 1::2] = torch.cos(pos * div)
    return maxerr(sinusoidal_positions(n, d, F64), ref)


def check_defaults():
    c = spec(model="d_model = 32\nn_heads = 4\nmax_seq = 8", ffn='activation = "swiglu"')
    assert c.d_ff == 256 and c.depth == 1 and c.bias and c.final and c.mask == "causal", vars(c)
    assert c.norm_type == "layernorm" and c.eps == 1e-5 and c.alpha == 1.0
    c = spec(model="d_model = 32\nn_heads = 4\nmax_seq = 8", ffn='activation = "geglu"\nmultiple_of = 32')
    assert c.d_ff == 96, c.d_ff  # int(85.33) = 85 -> 96
    c = spec(model="d_model = 48\nn_heads = 4\nmax_seq = 8", ffn='activation = "reglu"\nmultiple_of = 1')
    assert c.d_ff == 128, c.d_ff
    c = spec(model="d_model = 32\nn_heads = 4\nmax_seq = 8\ndepth = 6")
    assert c.d_ff == 128 and c.activation == "gelu"
    c = spec(model="d_model = 32\nn_heads = 4\nmax_seq = 8\ndepth = 8", norm='position = "deepnorm"')
    assert abs(c.alpha - 16 ** 0.25) < 1e-12 and not c.final
    c = spec(model="d_model = 32\nn_heads = 4\nmax_seq = 8\ndepth = 27", norm='position = "deepnorm"',
             attention="cross = true")
    assert abs(c.alpha - 81 ** 0.25) < 1e-12
    c = spec(model="d_model = 32\nn_heads = 4\nmax_seq = 8", norm='position = "post"')
    assert not c.final and c.alpha == 1.0
    for bad in ('[model]\nd_model = 32\nn_heads = 4\nmax_seq = 8\nwidth = 3',
                '[model]\nd_model = 30\nn_heads = 4\nmax_seq = 8'):
        try:
            Config.from_string('name = "x"\n' + bad)
        except ValueError:
            continue
        raise AssertionError("accepted a bad spec: " + bad)
    return 0.0


def check_layout(rng):
    cfg = Config.from_string(NUMPY_SPECS["ln_deepnorm_cross_final_gelu_tanh"].replace(
        '[norm]', '[embedding]\nvocab=10\n[head]\nloss="cross_entropy"\n[norm]'))
    layout, count = compute_layout(cfg)
    model = Oracle(cfg)
    assert count == sum(p.numel() for p in model.parameters())
    off = 0
    for name, o, shape in layout:
        assert o == off, name
        off += math.prod(shape)
    names = [n for n, _, _ in layout]
    assert names[:2] == ["embed.tokens", "embed.positions"]
    assert names[-3:] == ["final_norm.weight", "final_norm.bias", "head.weight"]
    assert names[2:6] == ["blocks.0.attn_norm.weight", "blocks.0.attn_norm.bias",
                          "blocks.0.attn.wq.weight", "blocks.0.attn.wq.bias"], names[2:6]
    # Blocks follow each other with a fixed stride.
    per_block = [n for n in names if n.startswith("blocks.0.")]
    b0 = dict((n, o) for n, o, _ in layout)
    stride = b0["blocks.1.attn_norm.weight"] - b0["blocks.0.attn_norm.weight"]
    for n in per_block:
        assert b0[n.replace("blocks.0.", "blocks.1.")] - b0[n] == stride, n
    expected_block = ["attn_norm.weight", "attn_norm.bias"] + \
        [f"attn.{w}.{k}" for w in ("wq", "wk", "wv", "wo") for k in ("weight", "bias")] + \
        ["cross_norm.weight", "cross_norm.bias"] + \
        [f"cross.{w}.{k}" for w in ("wq", "wk", "wv", "wo") for k in ("weight", "bias")] + \
        ["ffn_norm.weight", "ffn_norm.bias", "ffn.w_up.weight", "ffn.w_up.bias",
         "ffn.w_down.weight", "ffn.w_down.bias"]
    assert [n[len("blocks.0."):] for n in per_block] == expected_block, per_block
    # The JSON cross-check accepts the right table and rejects wrong ones.
    good = {"name": "a", "param_count": count,
            "tensors": [{"name": n, "offset": o, "shape": list(s)} for n, o, s in layout]}
    check_layout_json(cfg, good)
    import copy
    for mutate in (lambda j: j["tensors"][3].update(offset=j["tensors"][3]["offset"] + 1),
                   lambda j: j["tensors"].pop(),
                   lambda j: j.update(param_count=count + 1),
                   lambda j: j["tensors"][4].update(shape=[16, 15]),
                   lambda j: j["tensors"][5].update(name="blocks.0.attn.wk.bias")):
        bad = copy.deepcopy(good)
        mutate(bad)
        try:
            check_layout_json(cfg, bad)
        except AssertionError:
            continue
        raise AssertionError("layout check accepted a wrong table")
    # load_flat puts the right floats in the right tensor, and flat_params inverts it.
    flat = rng.standard_normal(count).astype(np.float32)
    model.load_flat(flat, layout_json=good)
    o, s = b0["blocks.1.ffn.w_down.weight"], model.get_parameter("blocks.1.ffn.w_down.weight").shape
    assert np.array_equal(model.get_parameter("blocks.1.ffn.w_down.weight").detach().numpy(),
                          flat[o:o + s[0] * s[1]].reshape(s[0], s[1]).astype(np.float64))
    return float(np.abs(model.flat_params() - flat).max())


def check_gradcheck(rng):
    cfg = Config.from_string(NUMPY_SPECS["rms_post_cross_silu_alpha"])
    model = Oracle(cfg, F64)
    model.load_flat(random_flat(model, rng))
    x = torch.from_numpy(rng.standard_normal((2, 3, 8))).requires_grad_()
    enc = torch.from_numpy(rng.standard_normal((2, 4, 8))).requires_grad_()
    ok = torch.autograd.gradcheck(lambda a, b: model(a, b)[0], (x, enc))
    assert ok
    # flat_grad against central finite differences of the loss on the flat buffer.
    cfg = Config.from_string(NUMPY_SPECS["embed_sin_tied_loss"])
    model = Oracle(cfg, F64)
    flat = random_flat(model, rng).astype(np.float64)
    tokens = rng.integers(0, cfg.vocab, (2, 5))
    tgt = rng.integers(0, cfg.vocab, (2, 5))
    tgt[1, 1] = -1

    def loss_at(vec):
        with torch.no_grad():
            for name, o, shape in model.layout:
                model.get_parameter(name).copy_(torch.from_numpy(vec[o:o + math.prod(shape)]).view(shape))
        return model(tokens, targets=tgt)[1]

    loss_at(flat)
    model.zero_grad()
    model(tokens, targets=tgt)[1].backward()
    g = model.flat_grad()
    err, h = 0.0, 1e-6
    for idx in rng.choice(len(flat), 40, replace=False):
        e = np.zeros_like(flat)
        e[idx] = h
        fd = (loss_at(flat + e).item() - loss_at(flat - e).item()) / (2 * h)
        err = max(err, abs(fd - g[idx]))
    return err


def check_float32(rng):
    cfg = Config.from_string(NUMPY_SPECS["embed_learned_untied_loss"])
    m64, m32 = Oracle(cfg, F64), Oracle(cfg, torch.float32)
    flat = random_flat(m64, rng)
    m64.load_flat(flat)
    m32.load_flat(flat)
    tokens = rng.integers(0, cfg.vocab, (2, 7))
    tgt = rng.integers(0, cfg.vocab, (2, 7))
    with torch.no_grad():
        a, b = m64(tokens, targets=tgt), m32(tokens, targets=tgt)
    assert a[0].dtype == F64 and b[0].dtype == torch.float32
    return max(maxerr(x, y) for x, y in zip(a, b))


def check_bf16(rng):
    """round_bf16 ties to even; Bf16Matmul's forward and both gradients are
    the rounded-operand formulas; a bf16 spec's oracle rounds its linear
    layers (it moves away from the f32 model, by about bf16's precision)."""
    x = torch.tensor([1 + 2**-8, 1 + 3 * 2**-8, -(1 + 2**-8 + 2**-20), 3.0], dtype=F64)
    want = torch.tensor([1.0, 1 + 2**-6, -(1 + 2**-7), 3.0], dtype=F64)
    err = (round_bf16(x) - want).abs().max().item()
    a = torch.from_numpy(rng.standard_normal((2, 3, 5))).requires_grad_()
    w = torch.from_numpy(rng.standard_normal((5, 4))).requires_grad_()
    dy = torch.from_numpy(rng.standard_normal((2, 3, 4)))
    y = Bf16Matmul.apply(a, w)
    y.backward(dy)
    ra, rw, rdy = round_bf16(a.detach()), round_bf16(w.detach()), round_bf16(dy)
    err = max(err, maxerr(y, ra @ rw), maxerr(a.grad, rdy @ rw.t()),
              maxerr(w.grad, ra.reshape(6, 5).t() @ rdy.reshape(6, 4)))
    cfg = spec(model='d_model = 16\nn_heads = 2\ndtype = "bf16"')
    model = Oracle(cfg, F64)
    model.load_flat(random_flat(model, rng))
    inp = rng.standard_normal((2, 5, cfg.d_model))
    with torch.no_grad():
        rounded = model(inp)[0]
        model.set_bf16(False)
        exact = model(inp)[0]
    moved = maxerr(rounded, exact) / exact.abs().max().item()
    assert 1e-4 < moved < 3e-2, moved
    return err

# --- mixture of experts ------------------------------------------------------

def moe_spec(model="d_model = 16\nn_heads = 2\nd_ff = 24\ndepth = 2\nmax_seq = 16",
             ffn='experts = 4', norm="", attention="", extra=""):
    return spec(model=model, norm=norm, ffn=ffn, attention=attention, extra=extra)


LM = '[embedding]\nvocab = 13\n[head]\nloss = "cross_entropy"'

MOE_NUMPY_SPECS = {  # against np_reference + np_moe: outputs, loss, counts
    "lm_rms_swiglu_top2_shared_aux": (
        'd_model=16\nn_heads=2\nd_ff=24\ndepth=2\nmax_seq=16',
        '[norm]\ntype="rmsnorm"\n[ffn]\nactivation="swiglu"\nexperts=4\ntop_k=2\n'
        'shared_experts=1\naux_loss=0.05\n' + LM.replace(" ", "")),
    "post_gelu_switch_top1_nobias": (
        'd_model=12\nn_heads=3\nd_ff=20\ndepth=2\nmax_seq=16\nbias=false',
        '[norm]\nposition="post"\n[ffn]\nactivation="gelu"\nexperts=4\ntop_k=1\n'
        'renormalize=false'),
    "deepnorm_cross_geglu_top3_of5": (
        'd_model=16\nn_heads=2\nd_ff=16\ndepth=2\nmax_seq=16',
        '[norm]\ntype="rmsnorm"\nposition="deepnorm"\n[ffn]\nactivation="geglu"\n'
        'experts=5\ntop_k=3\nshared_experts=2\n[attention]\ncross=true'),
    "lm_tied_relu_top2_norenorm_default_aux": (
        'd_model=16\nn_heads=4\nd_ff=24\ndepth=3\nmax_seq=16',
        '[ffn]\nactivation="relu"\nexperts=3\nrenormalize=false\n'
        '[embedding]\nvocab=17\npositions="sinusoidal"\n[head]\ntied=true\n'
        'loss="cross_entropy"'),
}


def moe_text(model, rest, name="m"):
    return f'name="{name}"\n[model]\n{model}\n{rest}\n'


def moe_inputs(cfg, rng, b, s, t=5):
    if cfg.has_embedding:
        inp = rng.integers(0, cfg.vocab, (b, s))
    else:
        inp = rng.standard_normal((b, s, cfg.d_model))
    enc = rng.standard_normal((b, t, cfg.d_model)) if cfg.cross else None
    tgt = None
    if cfg.has_loss:
        tgt = rng.integers(0, cfg.vocab, (b, s))
        tgt[0, ::3] = -1
    return inp, enc, tgt


def far_from_ties(model, rng, b, s, lengths=None, min_gap=1e-3, tries=50):
    """Inputs whose routing is at least min_gap away from a tie."""
    for _ in range(tries):
        inp, enc, tgt = moe_inputs(model.cfg, rng, b, s)
        if model.route_gap(inp, enc, tgt, lengths) >= min_gap:
            return inp, enc, tgt
    raise AssertionError(f"no inputs with a route gap >= {min_gap}")


def check_numpy_moe(key, rng, b=2, s=9):
    """The oracle's MoE model against the NumPy reference (np_moe: one token
    at a time, its own sort): outputs, loss with the aux terms, and the
    expert counts, exactly."""
    cfg = Config.from_string(moe_text(*MOE_NUMPY_SPECS[key]))
    assert cfg.moe
    model = Oracle(cfg, F64)
    flat = random_flat(model, rng)
    model.load_flat(flat)
    inp, enc, tgt = far_from_ties(model, rng, b, s, min_gap=1e-9)
    with torch.no_grad():
        outs = model(inp, enc, tgt)
    extras = {}
    refs = np_reference(cfg, flat, inp, enc, tgt, extras)
    counts = np.stack(extras["counts"])
    assert np.array_equal(model.expert_counts, counts), (model.expert_counts, counts)
    assert model.expert_counts.dtype == np.int32
    assert model.expert_counts.shape == (cfg.depth, cfg.experts)
    if cfg.has_loss:
        assert cfg.aux_loss > 0
        err = max(abs(a.item() - r) for a, r in zip(model.aux_losses, extras["aux"]))
    else:
        err = 0.0
    return max(err, max(maxerr(o, r) for o, r in zip(outs, refs)))


def dense_twin(text):
    """The spec text without its [ffn] MoE keys."""
    lines = [l for l in text.splitlines() if l.split("=")[0].strip() not in
             ("experts", "top_k", "renormalize", "shared_experts", "aux_loss")]
    return Config.from_string("\n".join(lines))


def copy_common(dst, src):
    """Every parameter of src whose name dst has too."""
    mine = dict(dst.named_parameters())
    with torch.no_grad():
        for name, p in src.named_parameters():
            if name in mine:
                mine[name].copy_(p)


def check_moe_identical_experts(rng, shared):
    """(a) E experts with the same weights, renormalize: the dense FFN with
    those weights, whatever the router; the router's gradient vanishes and
    d_x is the dense model's. With shared experts of the same weights too:
    twice the FFN (the dense model with w_down doubled)."""
    ffn = 'activation = "swiglu"\nexperts = 4\ntop_k = 2' + \
        ("\nshared_experts = 1" if shared else "")
    text = (f'name = "t"\n[model]\nd_model = 16\nn_heads = 2\nd_ff = 24\ndepth = 2\n'
            f'max_seq = 16\n[norm]\nposition = "post"\n[ffn]\n{ffn}\n')
    moe = Oracle(Config.from_string(text), F64)
    dense = Oracle(dense_twin(text), F64)
    assert not dense.cfg.moe
    dense.load_flat(random_flat(dense, rng))
    moe.load_flat(random_flat(moe, rng))
    copy_common(moe, dense)
    with torch.no_grad():
        for i in range(2):
            for w in ("w_gate", "w_up", "w_down"):
                for k in ("weight", "bias"):
                    src = dense.get_parameter(f"blocks.{i}.ffn.{w}.{k}")
                    moe.get_parameter(f"blocks.{i}.ffn.experts.{w}.{k}")[:] = src
                    if shared:
                        moe.get_parameter(f"blocks.{i}.ffn.shared.{w}.{k}").copy_(src)
                    if shared and w == "w_down":
                        src.mul_(2.0)
    x = rng.standard_normal((2, 7, 16))
    d_out = torch.from_numpy(rng.standard_normal((2, 7, 16)))
    xs = [torch.tensor(x, requires_grad=True) for _ in range(2)]
    ya, = moe(xs[0])
    yb, = dense(xs[1])
    (ya * d_out).sum().backward()
    (yb * d_out).sum().backward()
    router = max(moe.get_parameter(f"blocks.{i}.ffn.router.weight").grad.abs().max().item()
                 for i in range(2))
    assert moe.expert_counts.sum() == 2 * 2 * 14
    return max(maxerr(ya, yb), maxerr(xs[0].grad, xs[1].grad), router)


def expert_ffn_torch(cfg, ffn, e, x):
    """Expert e of an MoE module, written out (no ExpertLinear)."""
    W = lambda w: ffn.experts.get_submodule(w).weight[e]
    B = lambda w: (ffn.experts.get_submodule(w).bias[e]
                   if ffn.experts.get_submodule(w).bias is not None else 0.0)
    up = x @ W("w_up") + B("w_up")
    if cfg.gated:
        g = x @ W("w_gate") + B("w_gate")
        gate = {"swiglu": F.silu, "geglu": F.gelu, "reglu": F.relu}[cfg.activation](g)
        hdn = gate * up
    else:
        hdn = {"gelu": F.gelu, "relu": F.relu, "silu": F.silu,
               "gelu_tanh": lambda z: F.gelu(z, approximate="tanh")}[cfg.activation](up)
    return hdn @ W("w_down") + B("w_down")


def check_moe_all_experts(rng, renormalize, activation):
    """(b) top_k = E: the softmax-weighted sum of every expert (the gates sum
    to 1 with or without renormalize), plus the shared FFN."""
    cfg = moe_spec(ffn=f'activation = "{activation}"\nexperts = 3\ntop_k = 3\n'
                   f'renormalize = {str(renormalize).lower()}\nshared_experts = 1')
    model = Oracle(cfg, F64)
    model.load_flat(random_flat(model, rng))
    ffn = model.blocks[1].ffn
    u = torch.from_numpy(rng.standard_normal((3, 5, 16)))
    with torch.no_grad():
        got = ffn(u)
        p = torch.softmax(u @ ffn.router.weight, dim=-1)
        want = ffn.shared(u)
        for e in range(3):
            want = want + p[..., e:e + 1] * expert_ffn_torch(cfg, ffn, e, u)
    assert ffn.gap == math.inf
    assert (ffn.counts == 15).all()
    return maxerr(got, want)


def check_moe_uniform_routing(rng, renormalize):
    """(c) Router weights 0: p = 1/E for every token, the ties go to experts
    0..k-1, so f = (1, .., 1, 0, ..) and each layer's aux loss is
    alpha E sum_e f_e / E = alpha k; the loss is the cross-entropy plus
    depth alpha k (against the same spec with aux_loss = 0); the routed
    output is the mean (renormalize) or 1/E times the sum of experts 0..k-1."""
    ffn = f'activation = "gelu"\nexperts = 5\ntop_k = 2\nrenormalize = {str(renormalize).lower()}'
    text = ('name = "u"\n[model]\nd_model = 16\nn_heads = 2\nd_ff = 24\ndepth = 2\n'
            f'max_seq = 16\n[attention]\nkey_padding = true\n[ffn]\n{ffn}\n{LM}\n')
    model = Oracle(Config.from_string(text), F64)
    noaux = Oracle(Config.from_string(text.replace("top_k", "aux_loss = 0.0\ntop_k")), F64)
    assert model.cfg.aux_loss == 0.01 and noaux.cfg.aux_loss == 0.0
    model.load_flat(random_flat(model, rng))
    with torch.no_grad():
        for i in range(2):
            model.get_parameter(f"blocks.{i}.ffn.router.weight").zero_()
    noaux.load_flat(model.flat_params())
    tok = rng.integers(0, 13, (3, 6))
    tgt = rng.integers(0, 13, (3, 6))
    lengths = np.array([6, 2, 4])
    T = int(lengths.sum())
    with torch.no_grad():
        _, loss = model(tok, targets=tgt, lengths=lengths)
        _, ce = noaux(tok, targets=tgt, lengths=lengths)
    alpha, k = 0.01, 2
    err = max(abs(a.item() - alpha * k) for a in model.aux_losses)
    err = max(err, abs(loss.item() - (ce.item() + 2 * alpha * k)))
    want = np.zeros((2, 5), dtype=np.int32)
    want[:, :k] = T
    assert np.array_equal(model.expert_counts, want), model.expert_counts
    ffn = model.blocks[0].ffn
    assert (ffn.idx == torch.tensor([0, 1])).all() and ffn.gap == 0.0
    u = torch.from_numpy(rng.standard_normal((1, 4, 16)))
    with torch.no_grad():
        got = ffn(u)
        scale = 1 / k if renormalize else 1 / 5
        want_u = scale * sum(expert_ffn_torch(model.cfg, ffn, e, u) for e in range(k))
    return max(err, maxerr(got, want_u))


def check_moe_router_fd(rng, renormalize):
    """(d) The loss's gradient (cross-entropy + aux) for the router weights,
    from autograd, against central differences of the float64 loss at a
    point at least 1e-3 from a routing tie (the steps move no token's
    choice: checked); random directions over each router and single
    entries. Also gradcheck of a block's output in x and enc."""
    text = moe_text('d_model=16\nn_heads=2\nd_ff=24\ndepth=2\nmax_seq=16',
                    '[norm]\ntype="rmsnorm"\n[ffn]\nactivation="swiglu"\nexperts=4\n'
                    f'top_k=2\nrenormalize={str(renormalize).lower()}\naux_loss=0.3\n'
                    '[attention]\nkey_padding=true\n' + LM.replace(" ", ""))
    model = Oracle(Config.from_string(text), F64)
    flat = random_flat(model, rng, scale=0.5).astype(np.float64)
    model.load_flat(flat)
    lengths = np.array([7, 3])
    tok, _, tgt = far_from_ties(model, rng, 2, 7, lengths)

    def set_flat(vec):
        with torch.no_grad():
            for name, o, shape in model.layout:
                model.get_parameter(name).copy_(
                    torch.from_numpy(vec[o:o + math.prod(shape)]).view(shape))

    def loss_at(vec):
        set_flat(vec)
        with torch.no_grad():
            loss = model(tok, targets=tgt, lengths=lengths)[1].item()
        return loss, [m.idx.clone() for m in (b.ffn for b in model.blocks)]

    set_flat(flat)
    model.zero_grad()
    model(tok, targets=tgt, lengths=lengths)[1].backward()
    g = model.flat_grad()
    base_idx = [b.ffn.idx.clone() for b in model.blocks]
    err, h = 0.0, 1e-6
    for i in range(2):
        name = f"blocks.{i}.ffn.router.weight"
        o = dict((n, off) for n, off, _ in model.layout)[name]
        n = 16 * 4
        assert np.abs(g[o:o + n]).max() > 1e-3, "router gradient vanishes"
        dirs = [rng.standard_normal(n) for _ in range(3)]
        dirs += [np.eye(n)[j] for j in rng.choice(n, 8, replace=False)]
        for v in dirs:
            e = np.zeros_like(flat)
            e[o:o + n] = v * h
            (lp, ip), (lm, im) = loss_at(flat + e), loss_at(flat - e)
            for a, b_, c in zip(base_idx, ip, im):
                assert torch.equal(a, b_) and torch.equal(a, c), "a step moved a route"
            fd = (lp - lm) / (2 * h)
            err = max(err, abs(fd - float(g[o:o + n] @ v)))
    # gradcheck in x and enc (a block, no loss) away from ties.
    cfg = moe_spec(ffn='activation = "gelu_tanh"\nexperts = 4\ntop_k = 2\n'
                   f'renormalize = {str(renormalize).lower()}\nshared_experts = 1',
                   attention="cross = true")
    block = Oracle(cfg, F64)
    block.load_flat(random_flat(block, rng))
    for _ in range(50):
        x = torch.from_numpy(rng.standard_normal((2, 4, 16))).requires_grad_()
        enc = torch.from_numpy(rng.standard_normal((2, 3, 16))).requires_grad_()
        if block.route_gap(x.detach(), enc.detach()) > 1e-3:
            break
    assert torch.autograd.gradcheck(lambda a, c: block(a, c)[0], (x, enc))
    return err


def check_moe_counts(rng):
    """(e) expert_counts sums to k T per layer (T: valid tokens), each
    entry in [0, T]; the probe outputs; exactly the tokens' choices."""
    text = moe_text('d_model=16\nn_heads=2\nd_ff=24\ndepth=3\nmax_seq=16',
                    '[ffn]\nexperts=6\ntop_k=3\nshared_experts=1\n[attention]\n'
                    'key_padding=true\n[probes]\nexpert_counts=true\nhidden_norms=true\n' +
                    LM.replace(" ", ""))
    cfg = Config.from_string(text)
    assert cfg.probe_names() == ["hidden_norms", "expert_counts"]
    assert cfg.output_names() == ["logits", "loss"]
    model = Oracle(cfg, F64)
    model.load_flat(random_flat(model, rng))
    for b, s in ((1, 1), (3, 9), (4, 16)):
        lengths = rng.integers(1, s + 1, b)
        tok, _, tgt = moe_inputs(cfg, rng, b, s)
        with torch.no_grad():
            model(tok, targets=tgt, lengths=lengths)
        c = model.probe_outputs()["expert_counts"]
        T = int(lengths.sum())
        assert c.dtype == np.int32 and c.shape == (3, 6)
        assert (c.sum(1) == 3 * T).all() and (c >= 0).all() and (c <= T).all(), c
        valid = torch.arange(s)[None, :] < torch.from_numpy(lengths)[:, None]
        for i, blk in enumerate(model.blocks):
            idx = blk.ffn.idx[valid]
            want = np.bincount(idx.reshape(-1).numpy(), minlength=6)
            assert np.array_equal(c[i], want), (c[i], want)
    return 0.0


def check_moe_padded(rng, key):
    """(f) Padded tokens contribute nothing: at each MoE layer (its input u
    caught by a hook) the padded rows' FFN output is the shared FFN alone
    (0 without one), the valid rows' is np_moe on the valid rows only, and
    the counts and aux loss are np_moe's over the valid tokens."""
    text = _pad_spec({**PAD_SPECS, **HC_PAD_SPECS}[key])
    model = Oracle(Config.from_string(text), F64)
    cfg = model.cfg
    model.load_flat(random_flat(model, rng))
    W, has = np_weights(cfg, model.flat_params())
    seen = []
    hooks = [blk.ffn.register_forward_hook(
        lambda m, args, out: seen.append((args[0].detach(), args[1], out.detach())))
        for blk in model.blocks]
    b, s = 3, 8
    lengths = np.array([8, 1, 5])
    d = pad_inputs(cfg, rng, b, s, 3)
    with torch.no_grad():
        model(d["inp"], d["enc"], d["targets"], lengths=lengths)
    for h in hooks:
        h.remove()
    valid = torch.arange(s)[None, :] < torch.from_numpy(lengths)[:, None]
    err = 0.0
    for i, (u, key_valid, out) in enumerate(seen):
        assert torch.equal(key_valid, valid)
        ffn = model.blocks[i].ffn
        shared = ffn.shared(u) if cfg.shared_experts else torch.zeros_like(u)
        err = max(err, maxerr(out[~valid], shared[~valid]))
        rows, counts, aux = np_moe(cfg, W, has, f"blocks.{i}.ffn.", u[valid].numpy())
        err = max(err, maxerr(out[valid] - shared[valid], rows))
        assert np.array_equal(model.expert_counts[i], counts), (model.expert_counts[i], counts)
        assert (ffn.gates[~valid] == 0).all()
        if cfg.aux_loss > 0:
            err = max(err, abs(model.aux_losses[i].item() - aux))
    return err


def check_moe_bf16(rng):
    """dtype = "bf16": the router's and every expert's matmuls multiply
    bf16-rounded operands (as the dense linears), the rest stays exact."""
    cfg = moe_spec(model='d_model = 16\nn_heads = 2\nd_ff = 24\nmax_seq = 16\ndtype = "bf16"',
                   ffn='activation = "swiglu"\nexperts = 4\ntop_k = 2\nshared_experts = 1')
    model = Oracle(cfg, F64)
    model.load_flat(random_flat(model, rng))
    ffn = model.blocks[0].ffn
    assert ffn.router.bf16 and ffn.experts.w_up.bf16 and ffn.shared.w_up.bf16
    r = round_bf16
    u = torch.from_numpy(rng.standard_normal((2, 5, 16)))
    with torch.no_grad():
        got = ffn(u)
        p = torch.softmax(r(u) @ r(ffn.router.weight), -1)
        want = ffn.shared(u)
        X = lambda w, e, x: r(x) @ r(ffn.experts.get_submodule(w).weight[e]) + \
            ffn.experts.get_submodule(w).bias[e]
        for bi in range(2):
            for si in range(5):
                q = p[bi, si]
                chosen = sorted(range(4), key=lambda e: (-q[e].item(), e))[:2]
                g = q[chosen] / q[chosen].sum()
                for j, e in enumerate(chosen):
                    x = u[bi, si]
                    hdn = F.silu(X("w_gate", e, x)) * X("w_up", e, x)
                    want[bi, si] += g[j] * X("w_down", e, hdn)
        model.set_bf16(False)
        exact = ffn(u)
    assert not ffn.experts.w_down.bf16
    moved = maxerr(got, exact) / exact.abs().max().item()
    assert 1e-4 < moved < 5e-2, moved
    return maxerr(got, want)


def check_moe_route_gap(rng):
    """route()'s ties and gaps: equal router columns 1 and 2 between a
    larger and a smaller one tie every token's 2nd and 3rd choice (gap 0,
    the lower index chosen); top_k = E has no gap (inf); the gap is
    (p_k - p_k+1) / p_k."""
    cfg = moe_spec(ffn='experts = 4\ntop_k = 2')
    model = Oracle(cfg, F64)
    model.load_flat(random_flat(model, rng))
    a = torch.from_numpy(rng.standard_normal(16))
    with torch.no_grad():
        for blk in model.blocks:
            R = blk.ffn.router.weight
            R.zero_()
            R[:, 0], R[:, 3] = a, -a
    x = rng.standard_normal((2, 6, 16))
    assert model.route_gap(x) == 0.0
    for blk in model.blocks:
        assert (blk.ffn.idx[..., 1] == 1).all() and blk.ffn.counts[2] == 0
        assert (blk.ffn.counts[0] + blk.ffn.counts[3] == 12)
    # A gap by hand.
    from oracle import route
    p = torch.tensor([[0.1, 0.4, 0.3, 0.2], [0.25, 0.25, 0.25, 0.25],
                      [0.5, 0.2, 0.1, 0.2]], dtype=F64)
    idx, gap = route(p, 2)
    assert idx.tolist() == [[1, 2], [0, 1], [0, 1]], idx
    want = torch.tensor([(0.3 - 0.2) / 0.3, 0.0, 0.0], dtype=F64)
    idx3, gap3 = route(p, 3)
    assert idx3.tolist() == [[1, 2, 3], [0, 1, 2], [0, 1, 3]], idx3
    assert math.isinf(route(p, 4)[1][0])
    cfg = moe_spec(ffn='experts = 3\ntop_k = 3')
    full = Oracle(cfg, F64)
    full.load_flat(random_flat(full, rng))
    assert math.isinf(full.route_gap(x))
    dense = Oracle(spec(model="d_model = 16\nn_heads = 2\nmax_seq = 8"), F64)
    assert math.isinf(dense.route_gap(x[:, :4])) and dense.expert_counts is None
    return maxerr(gap, want)


def check_moe_config():
    """Defaults, the aux_loss resolution and the spec errors."""
    c = moe_spec(ffn="experts = 4")
    assert (c.moe, c.experts, c.top_k, c.renormalize, c.shared_experts, c.aux_loss) == \
        (True, 4, 2, True, 0, 0.0), vars(c)
    c = moe_spec(ffn="experts = 4", extra=LM)
    assert c.aux_loss == 0.01 and c.has_loss
    c = moe_spec(ffn="experts = 4\naux_loss = 0.0", extra=LM)
    assert c.aux_loss == 0.0
    c = moe_spec(ffn="experts = 8\ntop_k = 8\naux_loss = 0.5\nrenormalize = false", extra=LM)
    assert (c.top_k, c.aux_loss, c.renormalize) == (8, 0.5, False)
    c = moe_spec(ffn="experts = 0")
    assert not c.moe and c.aux_loss == 0.0 and c.probe_names() == []
    c = spec(model="d_model = 16\nn_heads = 2", extra=LM)
    assert not c.moe and c.aux_loss == 0.0
    bad = ["experts = 1", "experts = -2", "experts = 4\ntop_k = 0", "experts = 4\ntop_k = 5",
           "experts = 4\nshared_experts = -1", "experts = 4\naux_loss = -0.1",
           "experts = 4\naux_loss = 0.01",          # no loss
           "experts = 4\naux_loss = 0", "experts = 4\naux_loss = nan",
           "experts = 0\ntop_k = 1", "top_k = 2", "shared_experts = 1",
           "experts = 4\nrenormalize = 1", "experts = 2.5", "experts = true",
           "experts = 4\ntop_k = 2.0", "experts = 4\nrouter_bias = true"]
    for b in bad:
        try:
            moe_spec(ffn=b)
        except ValueError:
            continue
        raise AssertionError(f"accepted [ffn] {b}")
    for extra in ('[probes]\nexpert_counts = true', '[probes]\nexpert_counts = 1'):
        try:
            spec(model="d_model = 16\nn_heads = 2", extra=extra)
        except ValueError:
            continue
        raise AssertionError(f"accepted {extra}")
    c = moe_spec(ffn="experts = 4", extra='[probes]\nexpert_counts = true')
    assert c.probe_names() == ["expert_counts"]
    return 0.0


def check_moe_layout(rng):
    """Per block: ffn_norm, router [d, E], the experts' stacked linears
    (w_gate, w_up, w_down: weight [E, in, out] then bias [E, out]), the
    shared experts' dense FFN of width S d_ff, then ffn_post_norm; the JSON
    cross-check with rank-3 shapes; load_flat into [E, in, out]."""
    cfg = moe_spec(ffn='activation = "swiglu"\nexperts = 3\ntop_k = 1\nshared_experts = 2',
                   norm='position = "sandwich"')
    layout, count = compute_layout(cfg)
    blk = [(n[len("blocks.0."):], s) for n, _, s in layout if n.startswith("blocks.0.ffn")]
    d, f, E = 16, 24, 3
    want = [("ffn_norm.weight", (d,)), ("ffn_norm.bias", (d,)),
            ("ffn.router.weight", (d, E)),
            ("ffn.experts.w_gate.weight", (E, d, f)), ("ffn.experts.w_gate.bias", (E, f)),
            ("ffn.experts.w_up.weight", (E, d, f)), ("ffn.experts.w_up.bias", (E, f)),
            ("ffn.experts.w_down.weight", (E, f, d)), ("ffn.experts.w_down.bias", (E, d)),
            ("ffn.shared.w_gate.weight", (d, 2 * f)), ("ffn.shared.w_gate.bias", (2 * f,)),
            ("ffn.shared.w_up.weight", (d, 2 * f)), ("ffn.shared.w_up.bias", (2 * f,)),
            ("ffn.shared.w_down.weight", (2 * f, d)), ("ffn.shared.w_down.bias", (d,)),
            ("ffn_post_norm.weight", (d,)), ("ffn_post_norm.bias", (d,))]
    assert blk == want, blk
    dense = compute_layout(dense_twin('name="x"\n[model]\nd_model=16\nn_heads=2\nd_ff=24\n'
                                      'depth=2\nmax_seq=16\n[norm]\nposition="sandwich"\n'
                                      '[ffn]\nactivation="swiglu"\nexperts=3'))[1]
    ffn_dense = 3 * d * f + 2 * f + d
    shared = 3 * d * 2 * f + 2 * 2 * f + d
    assert count == dense + 2 * (d * E + E * ffn_dense + shared - ffn_dense), (count, dense)
    cfg2 = moe_spec(model="d_model = 8\nn_heads = 2\nd_ff = 12\nmax_seq = 8\nbias = false",
                    ffn='activation = "gelu"\nexperts = 2\ntop_k = 1')
    names = [(n, s) for n, _, s in compute_layout(cfg2)[0] if ".ffn." in n]
    assert names == [("blocks.0.ffn.router.weight", (8, 2)),
                     ("blocks.0.ffn.experts.w_up.weight", (2, 8, 12)),
                     ("blocks.0.ffn.experts.w_down.weight", (2, 12, 8))], names
    model = Oracle(cfg, F64)
    good = {"name": "t", "param_count": count,
            "tensors": [{"name": n, "offset": o, "shape": list(s)} for n, o, s in layout]}
    flat = rng.standard_normal(count).astype(np.float32)
    model.load_flat(flat, layout_json=good)
    o = dict((n, o) for n, o, _ in layout)["blocks.1.ffn.experts.w_down.weight"]
    w = model.get_parameter("blocks.1.ffn.experts.w_down.weight").detach().numpy()
    assert np.array_equal(w[2], flat[o + 2 * f * d:o + 3 * f * d].reshape(f, d))
    import copy
    bad = copy.deepcopy(good)
    k = [t["name"] for t in bad["tensors"]].index("blocks.0.ffn.experts.w_up.weight")
    bad["tensors"][k]["shape"] = [d, E, f]
    try:
        check_layout_json(cfg, bad)
    except AssertionError:
        return float(np.abs(model.flat_params() - flat).max())
    raise AssertionError("layout check accepted [d, E, ff]")


def moe_checks(rng):
    checks = [(f"moe numpy reference {k} (outputs, loss + aux, counts)",
               lambda k=k: check_numpy_moe(k, rng), 1e-10) for k in MOE_NUMPY_SPECS]
    checks += [
        ("moe spec keys, defaults, aux_loss resolution, errors", check_moe_config, 0.0),
        ("moe layout + JSON cross-check + load_flat", lambda: check_moe_layout(rng), 0.0),
        ("moe (a) identical experts = dense FFN (y, d_x; router grad 0)",
         lambda: check_moe_identical_experts(rng, False), 1e-12),
        ("moe (a) identical experts + shared = twice the FFN",
         lambda: check_moe_identical_experts(rng, True), 1e-12),
        ("moe (b) top_k = E renormalize = softmax-weighted sum",
         lambda: check_moe_all_experts(rng, True, "swiglu"), 1e-12),
        ("moe (b) top_k = E no renormalize = softmax-weighted sum",
         lambda: check_moe_all_experts(rng, False, "gelu"), 1e-12),
        ("moe (c) uniform routing: aux = alpha k per layer, lowest experts, counts",
         lambda: check_moe_uniform_routing(rng, True), 1e-14),
        ("moe (c) uniform routing, no renormalize",
         lambda: check_moe_uniform_routing(rng, False), 1e-14),
        ("moe (d) router gradient vs finite differences (+ gradcheck x, enc), renormalize",
         lambda: check_moe_router_fd(rng, True), 1e-7),
        ("moe (d) router gradient vs finite differences (+ gradcheck x, enc), Switch gates",
         lambda: check_moe_router_fd(rng, False), 1e-7),
        ("moe (e) expert_counts sum to k T per layer, = the choices",
         lambda: check_moe_counts(rng), 0.0),
        ("moe bf16: router and experts round their operands",
         lambda: check_moe_bf16(rng), 1e-12),
        ("moe route gaps and ties", lambda: check_moe_route_gap(rng), 1e-15),
    ]
    for key in ("moe_block_shared", "moe_lm_switch_noaux", "moe_lm_aux"):
        checks.append((f"moe (f) {key}: padded tokens are not routed (vs np_moe)",
                       lambda k=key: check_moe_padded(rng, k), 1e-12))
    return checks


# --- [residual] streams > 1: hyper-connections (HC, mHC) ----------------------

def hc_text(model="d_model=8\nn_heads=2\nd_ff=12\ndepth=2\nmax_seq=16", streams=2,
            mixing="mhc", rest="", name="h"):
    res = f"[residual]\nstreams={streams}\n" + (f'mixing="{mixing}"\n' if mixing else "")
    return f'name="{name}"\n[model]\n{model}\n{res}{rest}'


HC_PAD_SPECS = {  # as PAD_SPECS; key padding across hyper-connected blocks
    "hc_mhc_llama_ce": ('d_model=16\nn_heads=4\ndepth=2\nmax_seq=16\nbias=false',
                        'n_kv_heads=2\npositions="rope"',
                        '[residual]\nstreams=3\n[norm]\ntype="rmsnorm"\n[ffn]\n'
                        'activation="swiglu"\nmultiple_of=8\n[embedding]\nvocab=11\n'
                        'positions="none"\n[head]\nloss="cross_entropy"'),
    "hc_hc_cross_post": ('d_model=16\nn_heads=2\nd_ff=24\ndepth=2\nmax_seq=16',
                         'cross=true\nmask="bidirectional"',
                         '[residual]\nstreams=2\nmixing="hc"\n[norm]\nposition="post"'),
    "hc_mhc_moe_sandwich": ('d_model=16\nn_heads=2\nd_ff=24\ndepth=2\nmax_seq=16',
                            'sliding_window=3',
                            '[residual]\nstreams=2\nsinkhorn_iters=7\n[norm]\n'
                            'position="sandwich"\n[ffn]\nexperts=3\ntop_k=1'),
}


def sigmoid(z):
    return 1.0 / (1.0 + math.exp(-z))


def np_sinkhorn(logits, iters):
    """mHC Eq. 9 literally: M0 = exp(H), M = T_r(T_c(M))."""
    m = np.exp(logits)
    for _ in range(iters):
        m = m / m.sum(axis=-2, keepdims=True)
        m = m / m.sum(axis=-1, keepdims=True)
    return m


def check_hc_sinkhorn(rng):
    """After 20 iterations the rows sum to 1 (T_r is the last step) and the
    columns nearly (N(0, 1) logits, n = 2..8; a finite-iteration gap, cf.
    the paper's Fig. 7); after 200 they converge; entries are positive; a
    doubly stochastic start is a fixed point; = a literal NumPy Eq. 9 (no
    max subtraction) on moderate logits; large logits stay finite."""
    cols = 0.0
    for n in (2, 3, 4, 8):
        logits = rng.standard_normal((64, n, n))
        m = sinkhorn(torch.from_numpy(logits), 20)
        assert torch.all(m > 0)
        rows = (m.sum(-1) - 1).abs().max().item()
        assert rows < 1e-14, rows
        cols = max(cols, (m.sum(-2) - 1).abs().max().item())
        m200 = sinkhorn(torch.from_numpy(logits), 200)
        conv = (m200.sum(-2) - 1).abs().max().item()
        assert conv < 1e-12, conv
        lit = np.abs(m.numpy() - np_sinkhorn(logits, 20)).max()
        assert lit < 1e-14, lit
        ds = np.full((n, n), 0.5 / (n - 1)) + (0.5 - 0.5 / (n - 1)) * np.eye(n)
        fixed = np.abs(sinkhorn(torch.from_numpy(np.log(ds)), 20).numpy() - ds).max()
        assert fixed < 1e-15, fixed
    big = sinkhorn(torch.tensor([[800.0, 0.0], [0.0, 800.0]], dtype=F64), 20)
    assert torch.all(torch.isfinite(big)) and abs(big[0, 0].item() - 1) < 1e-12
    return cols  # the largest column-sum deviation after 20 iterations


def check_hc_hand(rng):
    """One hyper-connected sub-layer, n = 2 streams of C = 2, against scalar
    formulas written out here: mHC (Eqs. 3, 7, 8, 9) and HC (Eqs. 2, 10-13)
    with random mappings, F(u) = tanh(u W), pre-norm of type none (N = id)
    and post RMSNorm (N on each stream after the add)."""
    W = rng.standard_normal((2, 2))
    Wt = torch.from_numpy(W)
    f = lambda u: torch.tanh(u @ Wt)
    F_ = lambda u: [math.tanh(u[0] * W[0][c] + u[1] * W[1][c]) for c in range(2)]
    eps = 1e-3
    err = 0.0
    for mixing in ("mhc", "hc"):
        for position, kind in (("pre", "none"), ("post", "rmsnorm")):
            cfg = Config.from_string(hc_text(
                "d_model=2\nn_heads=1\nd_ff=2\nmax_seq=4", 2, mixing,
                f'[norm]\nposition="{position}"\ntype="{kind}"\neps={eps}'))
            model = Oracle(cfg, F64)
            model.load_flat(random_flat(model, rng, scale=0.7))
            blk = model.blocks[0]
            X = rng.standard_normal((1, 1, 2, 2))
            with torch.no_grad():
                got = blk._hc_sublayer(torch.from_numpy(X), blk.attn_hc, blk.attn_norm, f)
            x = X[0, 0].tolist()  # x[i][c]: stream i, channel c
            g = lambda name: P(model, "blocks.0.attn_hc." + name).numpy().tolist()
            if mixing == "mhc":
                phi, a, b = g("phi"), g("alpha"), g("b")
                v = [x[0][0], x[0][1], x[1][0], x[1][1]]
                r = math.sqrt(sum(e * e for e in v) / 4 + eps)
                t = [sum(v[m] / r * phi[m][k] for m in range(4)) for k in range(8)]
                pre = [sigmoid(a[0] * t[i] + b[i]) for i in range(2)]
                post = [2 * sigmoid(a[1] * t[2 + i] + b[2 + i]) for i in range(2)]
                M = [[math.exp(a[2] * t[4 + 2 * i + j] + b[4 + 2 * i + j]) for j in range(2)]
                     for i in range(2)]
                for _ in range(20):
                    for j in range(2):
                        c = M[0][j] + M[1][j]
                        M[0][j], M[1][j] = M[0][j] / c, M[1][j] / c
                    for i in range(2):
                        c = M[i][0] + M[i][1]
                        M[i] = [M[i][0] / c, M[i][1] / c]
                res = M  # res[i][j]: new stream i from old stream j
            else:
                sb, sa = g("static_beta"), g("static_alpha")
                fa, fb = g("dynamic_alpha_fn"), g("dynamic_beta_fn")
                s_a, s_b = g("dynamic_alpha_scale")[0], g("dynamic_beta_scale")[0]
                hb = []
                for i in range(2):
                    r = math.sqrt((x[i][0] ** 2 + x[i][1] ** 2) / 2 + eps)
                    hb.append([x[i][0] / r, x[i][1] / r])
                dot = lambda i, col: hb[i][0] * col[0] + hb[i][1] * col[1]
                pre = [s_a * math.tanh(dot(i, [fa[0][0], fa[1][0]])) + sa[i][0]
                       for i in range(2)]
                A_r = [[s_a * math.tanh(dot(i, [fa[0][1 + j], fa[1][1 + j]])) + sa[i][1 + j]
                        for j in range(2)] for i in range(2)]
                post = [s_b * math.tanh(dot(i, fb)) + sb[i] for i in range(2)]
                res = [[A_r[j][i] for j in range(2)] for i in range(2)]  # H' = A_r^T H
            u = [pre[0] * x[0][c] + pre[1] * x[1][c] for c in range(2)]
            Fu = F_(u)
            want = [[res[i][0] * x[0][c] + res[i][1] * x[1][c] + post[i] * Fu[c]
                     for c in range(2)] for i in range(2)]
            if position == "post":
                w = P(model, "blocks.0.attn_norm.weight").numpy()
                for i in range(2):
                    r = math.sqrt((want[i][0] ** 2 + want[i][1] ** 2) / 2 + eps)
                    want[i] = [want[i][c] / r * w[c] for c in range(2)]
            err = max(err, maxerr(got[0, 0], torch.tensor(want, dtype=F64)))
    return err


def check_hc_streams1(rng):
    """streams = 1 (or no [residual]) is today's model: the same layout (no
    new tensors), bit-identical outputs, probes and gradients."""
    bodies = [('d_model=8\nn_heads=2\nd_ff=12\ndepth=2\nmax_seq=16',
               '[norm]\nposition="sandwich"\n[attention]\ncross=true\n[ffn]\nexperts=3'),
              ('d_model=8\nn_heads=2\nd_ff=12\ndepth=2\nmax_seq=16',
               '[norm]\nposition="deepnorm"\ntype="rmsnorm"'),
              ('d_model=8\nn_heads=2\nd_ff=12\ndepth=2\nmax_seq=16',
               '[norm]\nposition="post"\n[embedding]\nvocab=9\n[head]\nloss="cross_entropy"'),
              ('d_model=8\nn_heads=2\nd_ff=12\ndepth=2\nmax_seq=16',
               '[residual]\nenabled=false\n[norm]\ntype="none"')]
    for model_keys, rest in bodies:
        base = f'name="s"\n[model]\n{model_keys}\n{rest}'
        one = base.replace('[residual]\n', '[residual]\nstreams=1\n') \
            if '[residual]' in base else base + '\n[residual]\nstreams=1\n'
        a, b = Oracle(Config.from_string(base), F64), Oracle(Config.from_string(one), F64)
        assert a.layout == b.layout and b.cfg.streams == 1 and not b.cfg.hyper
        assert not any("_hc." in n for n, _, _ in b.layout)
        flat = random_flat(a, rng)
        a.load_flat(flat)
        b.load_flat(flat)
        cfg = a.cfg
        d = pad_inputs(cfg, rng, 2, 5, 3)
        ra = run_with_grads(a, d["inp"], d["enc"], d["targets"], d["d_out"])
        rb = run_with_grads(b, d["inp"], d["enc"], d["targets"], d["d_out"])
        assert all(torch.equal(x, y) for x, y in zip(ra[0], rb[0]))
        assert np.array_equal(ra[1], rb[1]) and a.hidden_norms == b.hidden_norms
        for x, y in zip(ra[2:], rb[2:]):
            assert (x is None and y is None) or torch.equal(x, y)
    return 0.0


def hc_and_single(text_hc, rng):
    """The hyper-connected oracle at its default (paper) init of the
    hyper-connection tensors and random other tensors, and the single-stream
    model (no [residual]) with the same other tensors."""
    hc = Oracle(Config.from_string(text_hc), F64)
    single_text = "\n".join(l for l in text_hc.split("\n")
                            if not l.startswith(("[residual]", "streams", "mixing",
                                                 "sinkhorn_iters")))
    single = Oracle(Config.from_string(single_text), F64)
    single.load_flat(random_flat(single, rng))
    with torch.no_grad():
        for name, p in single.named_parameters():
            hc.get_parameter(name).copy_(p)
    return hc, single


def check_hc_init_equivalence(rng):
    """HC's init (Zhu et al. Sec. 2.3, Eq. 14: A_m = e_(k mod n), A_r = I,
    B = 1, dynamic parts 0) keeps the n streams equal to the single-stream
    (Pre-Norm) model's hidden state; this oracle's post / deepnorm / sandwich
    placements keep that too. So the merged output (the sum of the streams)
    is n times the single-stream model's before final_norm, and final_norm's
    output is the single-stream model's with eps / n^2 (checked by applying
    final_norm to n h). mHC's init (b = +-3) reads H_pre with sum
    sigma(3) + (n-1) sigma(-3): exactly 1 for n = 2, so n = 2 mHC is exact
    too; n = 4 under a pre-norm (scale-invariant up to eps) is, to ~eps."""
    err = 0.0
    m = "d_model=8\nn_heads=2\nd_ff=12\ndepth=3\nmax_seq=16"
    cases = [("hc", 4, '[norm]\nfinal=false\n[attention]\ncross=true', 1.0),
             ("hc", 3, '[norm]\nposition="post"\ntype="rmsnorm"', 1.0),
             ("hc", 2, '[norm]\nposition="deepnorm"\n[ffn]\nexperts=3\ntop_k=2', 1.0),
             ("hc", 3, '[norm]\nposition="sandwich"\ntype="none"', 1.0),
             ("hc", 4, '[norm]\ntype="rmsnorm"', 1.0),  # final_norm
             ("mhc", 2, '[norm]\nposition="post"\n[attention]\ncross=true', 1.0),
             ("mhc", 2, '[norm]\nfinal=false\ntype="rmsnorm"', 1.0),
             ("mhc", 4, '[norm]\nfinal=false\neps=1e-14', 1e3)]
    for mixing, n, rest, scale in cases:
        hc, single = hc_and_single(hc_text(m, n, mixing, rest), rng)
        x = rng.standard_normal((2, 5, 8))
        enc = rng.standard_normal((2, 3, 8)) if hc.cfg.cross else None
        with torch.no_grad():
            (y,) = hc(x, enc)
            if hc.cfg.final:
                single.cfg.final = False  # its hidden state before final_norm
                (h,) = single(x, enc)
                want = hc.final_norm(n * h)
            else:
                (h,) = single(x, enc)
                want = n * h
        err = max(err, maxerr(y, want) / scale)
        err = max(err, np.abs(np.array(hc.hidden_norms) -
                              n * np.array(single.hidden_norms)).max() / scale)
    return err


def check_hc_gradcheck(rng):
    """torch.autograd.gradcheck (float64) through a 2-stream mHC block and an
    HC block with cross-attention: every parameter of the block (the mHC's
    phi, alpha, b through sigmoid, 2 sigmoid and the 20 unrolled Sinkhorn
    iterations; HC's through tanh) and the inputs (the streams, enc); then
    the whole model (the copy to the streams and their sum) on x and enc,
    and the Sinkhorn alone on its logits."""
    from torch.nn.utils.stateless import functional_call
    for mixing, pos in (("mhc", "pre"), ("hc", "post"), ("mhc", "sandwich")):
        cfg = Config.from_string(hc_text(
            "d_model=4\nn_heads=2\nd_ff=6\nmax_seq=8\ndepth=2", 2, mixing,
            f'[norm]\ntype="rmsnorm"\nposition="{pos}"\n[attention]\ncross=true'))
        model = Oracle(cfg, F64)
        model.load_flat(random_flat(model, rng, scale=0.5))
        blk = model.blocks[1]
        names = [n for n, _ in blk.named_parameters()]
        params = [p.detach().clone().requires_grad_() for _, p in blk.named_parameters()]
        X = torch.from_numpy(rng.standard_normal((1, 3, 2, 4))).requires_grad_()
        enc = torch.from_numpy(rng.standard_normal((1, 2, 4))).requires_grad_()

        def f(X, enc, *ps):
            return functional_call(blk, dict(zip(names, ps)), (X, enc))

        assert torch.autograd.gradcheck(f, (X, enc, *params))
        x = torch.from_numpy(rng.standard_normal((2, 3, 4))).requires_grad_()
        e = torch.from_numpy(rng.standard_normal((2, 2, 4))).requires_grad_()
        assert torch.autograd.gradcheck(lambda a, b: model(a, b)[0], (x, e))
    logits = torch.from_numpy(rng.standard_normal((2, 3, 3))).requires_grad_()
    assert torch.autograd.gradcheck(lambda t: sinkhorn(t, 20), (logits,))
    return 0.0


def check_hc_layout(rng):
    """Per sub-layer, before its norm: mhc phi [n d, n^2 + 2n], alpha [3],
    b [n^2 + 2n]; hc static_beta [n], static_alpha [n, n + 1],
    dynamic_alpha_fn [d, n + 1], dynamic_alpha_scale [1], dynamic_beta_fn
    [d], dynamic_beta_scale [1]; the param count; the JSON cross-check and
    load_flat; the default (paper) init values, home stream k mod n."""
    d, n = 8, 3
    err = 0.0
    for mixing in ("mhc", "hc"):
        text = hc_text("d_model=8\nn_heads=2\nd_ff=12\ndepth=2\nmax_seq=16", n, mixing,
                       '[norm]\nposition="sandwich"\n[attention]\ncross=true')
        cfg = Config.from_string(text)
        layout, count = compute_layout(cfg)
        names = [(nm[len("blocks.0."):], s) for nm, _, s in layout if nm.startswith("blocks.0.")]
        if mixing == "mhc":
            m = n * n + 2 * n
            hc = lambda sub: [(sub + "_hc.phi", (n * d, m)), (sub + "_hc.alpha", (3,)),
                              (sub + "_hc.b", (m,))]
            per = n * d * m + 3 + m
        else:
            hc = lambda sub: [(sub + "_hc.static_beta", (n,)),
                              (sub + "_hc.static_alpha", (n, n + 1)),
                              (sub + "_hc.dynamic_alpha_fn", (d, n + 1)),
                              (sub + "_hc.dynamic_alpha_scale", (1,)),
                              (sub + "_hc.dynamic_beta_fn", (d,)),
                              (sub + "_hc.dynamic_beta_scale", (1,))]
            per = n + n * (n + 1) + d * (n + 1) + 1 + d + 1
        subs = [nm for nm, _ in names]
        for sub in ("attn", "cross", "ffn"):
            k = subs.index(sub + "_norm.weight")
            assert names[k - len(hc(sub)):k] == hc(sub), names
            assert subs[k + 2:k + 4] == (([sub + ".wq.weight", sub + ".wq.bias"]) if sub != "ffn"
                                         else ["ffn.w_up.weight", "ffn.w_up.bias"])
        plain = compute_layout(Config.from_string(
            text.replace(f'[residual]\nstreams={n}\nmixing="{mixing}"\n', '')))[1]
        assert count == plain + 2 * 3 * per, (count, plain, per)
        good = {"name": "h", "param_count": count,
                "tensors": [{"name": nm, "offset": o, "shape": list(s)} for nm, o, s in layout]}
        model = Oracle(cfg, F64)
        for i in range(2):  # the defaults are the paper init, home k mod n
            for j, sub in enumerate(hc_sublayers(cfg)):
                r = hc_home_stream(cfg, i, sub)
                assert r == (3 * i + j) % n
                for nm, v in hc_init_values(cfg, i, sub).items():
                    got = P(model, f"blocks.{i}.{sub}_hc.{nm}").numpy()
                    assert np.array_equal(got, v), (i, sub, nm)
                init = hc_init_values(cfg, i, sub)
                if mixing == "mhc":
                    b = init["b"]
                    assert b[r] == 3 and (np.delete(b[:n], r) == -3).all()
                    assert (b[n:2 * n] == 0).all()
                    assert np.array_equal(b[2 * n:].reshape(n, n), 6 * np.eye(n) - 3)
                    assert (init["alpha"] == 0.01).all() and not init["phi"].any()
                else:
                    a = init["static_alpha"]
                    assert a[r, 0] == 1 and a[:, 0].sum() == 1
                    assert np.array_equal(a[:, 1:], np.eye(n))
                    assert (init["static_beta"] == 1).all()
        flat = rng.standard_normal(count).astype(np.float32)
        model.load_flat(flat, layout_json=good)
        err = max(err, float(np.abs(model.flat_params() - flat).max()))
        o = dict((nm, o) for nm, o, _ in layout)["blocks.1.cross_hc.b" if mixing == "mhc"
                                                  else "blocks.1.cross_hc.static_alpha"]
        w = P(model, "blocks.1.cross_hc." + ("b" if mixing == "mhc" else "static_alpha"))
        assert np.array_equal(w.numpy().reshape(-1),
                              flat[o:o + w.numel()].astype(np.float64))
    return err


def check_hc_config():
    """[residual] streams / mixing / sinkhorn_iters: defaults and errors."""
    m = "d_model=8\nn_heads=2\nmax_seq=8"
    c = spec(model=m)
    assert (c.streams, c.hyper, c.mixing, c.sinkhorn_iters) == (1, False, "none", 0)
    c = Config.from_string(hc_text(m, 4, None))
    assert (c.streams, c.hyper, c.mixing, c.sinkhorn_iters) == (4, True, "mhc", 20)
    c = Config.from_string(hc_text(m, 2, "hc"))
    assert (c.mixing, c.sinkhorn_iters) == ("hc", 0)
    c = Config.from_string(hc_text(m, 3, "mhc", "").replace('mixing="mhc"',
                                                            'sinkhorn_iters=5'))
    assert (c.mixing, c.sinkhorn_iters) == ("mhc", 5)
    c = spec(model=m, extra="[residual]\nstreams=1\nenabled=false")
    assert not c.hyper and not c.residual
    bad = ["streams=0", "streams=-2", "streams=2.0", "streams=true", 'streams="2"',
           'streams=1\nmixing="mhc"', "streams=1\nsinkhorn_iters=20",
           'mixing="hc"', "sinkhorn_iters=4",
           'streams=2\nmixing="none"', 'streams=2\nmixing="HC"', "streams=2\nmixing=1",
           "streams=2\nsinkhorn_iters=0", "streams=2\nsinkhorn_iters=2.5",
           "streams=2\nsinkhorn_iters=true",
           'streams=2\nmixing="hc"\nsinkhorn_iters=20',
           "streams=2\nenabled=false", 'streams=4\nmixing="hc"\nenabled=false',
           "streams=2\nexpansion=4"]
    for b in bad:
        try:
            spec(model=m, extra="[residual]\n" + b)
        except ValueError:
            continue
        raise AssertionError(f"accepted [residual] {b}")
    return 0.0


def hc_checks(rng):
    checks = [
        ("hc spec keys, defaults, errors (streams > 1 with enabled = false)",
         check_hc_config, 0.0),
        ("hc layout (mhc, hc) + param count + JSON cross-check + paper init values",
         lambda: check_hc_layout(rng), 0.0),
        ("hc Sinkhorn-Knopp, N(0, 1) logits: rows 1 (< 1e-14) and columns ~1 "
         "(max_err) after 20 iterations, < 1e-12 after 200, = NumPy Eq. 9",
         lambda: check_hc_sinkhorn(rng), 3e-3),
        ("hc hand-computed n = 2, C = 2 layer (mhc, hc; pre none, post rmsnorm)",
         lambda: check_hc_hand(rng), 1e-14),
        ("hc streams = 1 is today's residual, bit-identical",
         lambda: check_hc_streams1(rng), 0.0),
        ("hc at init = single-stream model (x n before final_norm; hc all positions, "
         "mhc n = 2, n = 4 to eps)", lambda: check_hc_init_equivalence(rng), 1e-12),
        ("hc gradcheck: mhc / hc blocks (params, streams, enc), model, Sinkhorn",
         lambda: check_hc_gradcheck(rng), 0.0),
    ]
    for key in HC_PAD_SPECS:
        checks += [
            (f"key_padding {key}: rows = truncated unpadded model (outputs, loss, grads)",
             lambda k=key: check_padding_truncated(k, rng), 1e-10),
            (f"key_padding {key}: padded inputs change nothing",
             lambda k=key: check_padding_invariant(k, rng), 1e-12),
        ]
    return checks


def main():
    rng = np.random.default_rng(0)
    checks = []
    for position in ("pre", "post"):
        for act in ("relu", "gelu", "gelu_tanh", "silu"):
            for mask in ("causal", "bidirectional"):
                checks.append((f"nn.TransformerEncoderLayer {position} {act} {mask}",
                               lambda p=position, a=act, m=mask: check_encoder(p, a, m, rng), 1e-10))
        for mask in ("causal", "bidirectional"):
            checks.append((f"nn.TransformerDecoderLayer {position} cross {mask}",
                           lambda p=position, m=mask: check_decoder(p, m, rng), 1e-10))
    for mask in ("causal", "bidirectional"):
        checks.append((f"nn.TransformerEncoderLayer src_key_padding_mask {mask}",
                       lambda m=mask: check_encoder_key_padding(m, rng), 1e-10))
    for name, text in NUMPY_SPECS.items():
        checks.append((f"numpy reference {name}", lambda t=text: check_numpy(t, rng), 1e-10))
    checks += [
        ("cross-entropy vs F.cross_entropy", lambda: check_loss_vs_torch(rng), 1e-12),
        ("sinusoidal vs Vaswani formula", check_sinusoidal, 1e-12),
        ("spec defaults", check_defaults, 0.0),
        ("layout + JSON cross-check + load_flat", lambda: check_layout(rng), 0.0),
        ("gradcheck + flat_grad vs finite differences", lambda: check_gradcheck(rng), 1e-6),
        ("float32 oracle vs float64", lambda: check_float32(rng), 1e-4),
        ("bf16 rounding and matmul", lambda: check_bf16(rng), 1e-12),
        ("key_padding spec and lengths errors", lambda: check_padding_errors(rng), 0.0),
        ("key_padding gradcheck (empty windows, cross)",
         lambda: check_padding_gradcheck(rng), 0.0),
    ]
    for key in PAD_SPECS:
        if key not in PAD_POOLED:
            checks.append(
                (f"key_padding {key}: rows = truncated unpadded model (outputs, loss, grads)",
                 lambda k=key: check_padding_truncated(k, rng), 1e-10))
        checks += [
            (f"key_padding {key}: padded inputs change nothing",
             lambda k=key: check_padding_invariant(k, rng), 1e-12),
            (f"key_padding {key}: lengths = seq is the unpadded model",
             lambda k=key: check_padding_full_length(k, rng), 1e-13),
        ]
    checks += moe_checks(rng)
    checks += hc_checks(np.random.default_rng(15))
    passed = failed = 0
    for name, fn, tol in checks:
        try:
            err = fn()
            ok = err <= tol
            print(f"{'PASS' if ok else 'FAIL'} {name}: max_err={err:.3g} tol={tol:g}")
        except Exception:
            ok = False
            print(f"FAIL {name}: exception")
            traceback.print_exc(file=sys.stdout)
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
