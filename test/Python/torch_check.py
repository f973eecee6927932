"""tfc.torch.Module in plain PyTorch loops (test/Python/torch-module.test):

  train LM_SPEC TOKENS LOG  5 steps of torch.optim.Adam (lr 1e-2) on the
      fixed batch of the token file (4 rows of its 16 + 1 tokens); prints
      each step's loss beside tfc-train's (log.csv of the same config) and
      the float32 oracle's trained by the same optimizer.
  block SPEC  an x -> y model: (y * w).sum().backward() for a random w gives
      the oracle's d_x and parameter gradients.
  misuse LM_SPEC  gradients through the logits of a model with a loss, and
      a wrong input count: each a tfc.Error.
"""
import csv
import os
import sys

import numpy as np
import torch

here = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(here, "..", "..", "python"))
sys.path.insert(0, os.path.join(here, "..", "Numerics"))
import tfc  # noqa: E402
import tfc.torch  # noqa: E402
from oracle import Oracle  # noqa: E402

cache = os.environ["TFC_CACHE_DIR"]


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def train(spec, tokens, log):
    m = tfc.compile(spec, threads=1)
    m.init(7)  # train.seed of the config: tfc-train's init seed
    net = tfc.torch.Module(m)
    ref = Oracle.from_file(spec, dtype=torch.float32)
    ref.load_flat(m.params)
    w = np.fromfile(tokens, np.uint16).astype(np.int64)
    tok, tgt = torch.tensor(np.tile(w[:16], (4, 1))), torch.tensor(np.tile(w[1:], (4, 1)))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    opt_ref = torch.optim.Adam(ref.parameters(), lr=1e-2)
    with open(log) as f:
        logged = [float(r["loss"]) for r in csv.DictReader(f)]
    worst = 0.0
    for step in range(5):
        opt.zero_grad()
        _, loss = net(tok, tgt)
        loss.backward()
        opt.step()
        opt_ref.zero_grad()
        _, loss_ref = ref(tok, targets=tgt)
        loss_ref.backward()
        opt_ref.step()
        worst = max(worst, rel(loss.item(), logged[step]), rel(loss.item(), loss_ref.item()))
        print(f"step {step + 1}: {loss.item():.9g} tfc-train {logged[step]:.9g} "
              f"oracle {loss_ref.item():.9g}")
    print(f"worst relative difference {worst:.1e}: " + ("within 1e-5" if worst <= 1e-5 else "OVER"))


def block(spec):
    m = tfc.compile(spec, threads=1)
    m.init(2)
    net = tfc.torch.Module(m)
    ref = Oracle.from_file(spec)
    ref.load_flat(m.params)
    x = torch.randn(2, 5, m.d_model, generator=torch.Generator().manual_seed(4))
    xa, xb = x.clone().requires_grad_(), x.double().requires_grad_()
    (y,) = net(xa)
    (y_ref,) = ref(xb)
    # A random projection: sum(y * y) would be constant under the final
    # norm (at init its weight is 1), its gradient 0 but for round-off.
    w = torch.randn(y.shape, generator=torch.Generator().manual_seed(5))
    (y * w).sum().backward()
    (y_ref * w.double()).sum().backward()
    def r(a, b):
        return float((a.double() - b).abs().max() / b.abs().max())
    worst = max(r(y.detach(), y_ref.detach()), r(xa.grad, xb.grad),
                r(net.flat.grad, torch.as_tensor(np.asarray(ref.flat_grad(), np.float64))))
    print(f"block: y, d_x, d_params worst {worst:.1e}: " +
          ("within 1e-4" if worst <= 1e-4 else "OVER"))
    q = net.tensor("blocks.0.attn.wq.weight")
    print("tensor view shares memory:",
          q.data_ptr() == m.tensors["blocks.0.attn.wq.weight"].ctypes.data)


def misuse(spec):
    net = tfc.torch.Module(tfc.compile(spec, threads=1))
    tok = torch.zeros(2, 5, dtype=torch.int32)
    logits, loss = net(tok, tok)
    try:
        (logits.sum() + loss).backward()
        print("through logits: no error")
    except tfc.Error as e:
        print("through logits:", e)
    try:
        net(tok)
        print("input count: no error")
    except tfc.Error as e:
        print("input count:", e)


if __name__ == "__main__":
    {"train": train, "block": block, "misuse": misuse}[sys.argv[1]](*sys.argv[2:])
