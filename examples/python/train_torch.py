"""A tfc-compiled model trained in a plain PyTorch loop, and the same model
driven on numpy arrays: examples/python, run from the repository root

    PYTHONPATH=python python3 examples/python/train_torch.py

(test/Python/examples.test runs it). tfc.compile builds the spec once
(cached in ~/.cache/tfc, or $TFC_CACHE_DIR).
"""
import numpy as np
import torch

import tfc
import tfc.torch

model = tfc.compile("examples/cmake-consumer/tiny_lm.toml", threads=1)
model.init(seed=7)
print(f"{model.name}: {model.param_count} parameters, vocab {model.vocab}")

# Each row counts up from its own start: the next token is predictable.
rows = [[(3 * b + s) % model.vocab for s in range(17)] for b in range(4)]
tokens = torch.tensor([r[:16] for r in rows])
targets = torch.tensor([r[1:] for r in rows])

net = tfc.torch.Module(model)  # net.flat is model.params, shared
opt = torch.optim.AdamW(net.parameters(), lr=1e-2, weight_decay=0.01)
for step in range(1, 21):
    opt.zero_grad()
    logits, loss = net(tokens, targets)
    loss.backward()
    opt.step()
    if step in (1, 20):
        print(f"step {step}: loss {loss.item():.4f}")

# The same model on numpy, no torch: the trained parameters are its own.
out = model.forward(tokens=tokens.numpy().astype(np.int32),
                    targets=targets.numpy().astype(np.int32))
guess = out["logits"][0, :5].argmax(-1)
print("next tokens of row 0:", guess.tolist(), "expected:", rows[0][1:6])
