#!/usr/bin/env python3
"""The floating-point work a spec's model needs, counted from the spec (read
by the independent oracle's Config, not by tfc): the benchmarks divide it
by the measured time for GFLOP/s and a share of the FMA peak.

    model_flops.py spec.toml batch seq [--matmuls]

Prints `forward_flops N` and `forward_backward_flops N`; with --matmuls
instead the matmuls themselves, `PASS COUNT M N K` a line (PASS forward or
backward; COUNT row-major [M,K] x [K,N] products), the work that
bench_matmuls.c gives the matmul-only references. Counted: matmuls,
2 FLOPs per multiply-add, nothing else (norms, activations and softmax are
a few percent at the widths benchmarked, and counting them would flatter).
- Linear layers: 2*m*n_in*n_out each (m = batch*seq); backward twice that
  (input and weight gradients).
- Attention, per query-key pair the model attends to (a causal mask: the
  s*(s+1)/2 pairs on and below the diagonal, not s*s; a sliding window of
  w keys: at most w pairs per query): 2*head_dim for
  Q K^T and 2*head_dim for P V. Backward, flash style: S = Q K^T again
  (recomputed, not saved), dP = dO V^T, dV = P^T dO, dQ = dS K and
  dK = dS^T Q: 5 pair-matmuls, 2.5 times the forward's.
- The head's logits as a linear layer; the embedding lookup is free.
The matmul list does the same work as a BLAS user would: attention per
(batch, head) in query blocks of ATTENTION_BLOCK rows, each against the
keys up to its last row (block-causal: a little more than the pairs
counted above; under a window from the block's first row's first key),
the linear layers' gradients as dX = dY W^T, dW = X^T dY."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "test", "Numerics"))
from oracle import Config  # noqa: E402


def key_range(i, seq, causal, window):
    """[first, last] of the keys query i of self-attention sees."""
    first = max(0, i - window + 1) if window else 0
    last = i if causal else (min(seq - 1, i + window - 1) if window else seq - 1)
    return first, last


def self_pairs(seq, causal, window):
    """The (query, key) pairs self-attention attends to."""
    if not window:
        return seq * (seq + 1) // 2 if causal else seq * seq
    return sum(last - first + 1 for first, last in
               (key_range(i, seq, causal, window) for i in range(seq)))


def flops(cfg, batch, seq):
    m, d, f = batch * seq, cfg.d_model, cfg.d_ff
    pairs_self = batch * cfg.n_heads * self_pairs(
        seq, cfg.mask == "causal", cfg.sliding_window)
    pairs_cross = batch * cfg.n_heads * seq * seq if cfg.cross else 0
    per_pair = 2 * 2 * cfg.head_dim  # Q K^T and P V.

    q, kv = cfg.n_heads * cfg.head_dim, cfg.n_kv_heads * cfg.head_dim
    attention_linear = 2 * m * d * (2 * q + 2 * kv)  # Q, K, V, O.
    linear = attention_linear * (2 if cfg.cross else 1)
    linear += (3 if cfg.gated else 2) * 2 * m * d * f
    linear *= cfg.depth
    if cfg.has_head:
        linear += 2 * m * d * cfg.vocab
    attention = cfg.depth * (pairs_self + pairs_cross) * per_pair

    forward = linear + attention
    backward = 2 * linear + 5 * attention // 2
    return forward, forward + backward


ATTENTION_BLOCK = 64


def matmuls(cfg, batch, seq):
    """[(pass, count, m, n, k)]: the model's matmuls, C[m,n] = A[m,k] B[k,n]."""
    m, d, f, dh = batch * seq, cfg.d_model, cfg.d_ff, cfg.head_dim
    q, kv = cfg.n_heads * dh, cfg.n_kv_heads * dh
    linear = [(d, q), (d, kv), (d, kv), (q, d)] * (2 if cfg.cross else 1)
    linear += [(d, f)] * (2 if cfg.gated else 1) + [(f, d)]
    out = []
    for n_in, n_out in linear:
        out.append(("forward", cfg.depth, m, n_out, n_in))
        out.append(("backward", cfg.depth, m, n_in, n_out))  # dX = dY W^T
        out.append(("backward", cfg.depth, n_in, n_out, m))  # dW = X^T dY
    if cfg.has_head:
        out.append(("forward", 1, m, cfg.vocab, d))
        out.append(("backward", 1, m, d, cfg.vocab))
        out.append(("backward", 1, d, cfg.vocab, m))
    heads = cfg.depth * batch * cfg.n_heads

    def attention(causal, window, count):
        for q0 in range(0, seq, ATTENTION_BLOCK):
            rows = min(ATTENTION_BLOCK, seq - q0)
            first, _ = key_range(q0, seq, causal, window)
            _, last = key_range(q0 + rows - 1, seq, causal, window)
            keys = last - first + 1
            out.append(("forward", count, rows, keys, dh))      # S = Q K^T
            out.append(("forward", count, rows, dh, keys))      # O = P V
            out.append(("backward", count, rows, keys, dh))     # S again
            out.append(("backward", count, rows, keys, dh))     # dP = dO V^T
            out.append(("backward", count, keys, dh, rows))     # dV = P^T dO
            out.append(("backward", count, rows, dh, keys))     # dQ = dS K
            out.append(("backward", count, keys, dh, rows))     # dK = dS^T Q

    attention(cfg.mask == "causal", cfg.sliding_window, heads)
    if cfg.cross:
        attention(False, 0, heads)
    return out


def main():
    args = [a for a in sys.argv[1:] if a != "--matmuls"]
    if len(args) != 3:
        sys.exit("usage: model_flops.py spec.toml batch seq [--matmuls]")
    cfg = Config.from_file(args[0])
    batch, seq = int(args[1]), int(args[2])
    if "--matmuls" in sys.argv:
        for row in matmuls(cfg, batch, seq):
            print(*row)
        return
    forward, forward_backward = flops(cfg, batch, seq)
    print(f"forward_flops {forward}")
    print(f"forward_backward_flops {forward_backward}")


if __name__ == "__main__":
    main()
